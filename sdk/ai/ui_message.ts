/**
 * Switchboard chat messages <-> AI SDK `UIMessage`s. A message's `content` is plain text, or,
 * when it holds more than text (reasoning, tool calls, files, data) or metadata,
 * `{ text, parts, metadata? }`: `parts` are the UIMessage parts as the AI SDK made them and
 * `text` their text, so clients that only render text keep working.
 */
import type { UIMessage } from "ai";
import type { ChatMessage } from "../client/mod.ts";

/** A UIMessage part (any kind). */
export type UIPart = UIMessage["parts"][number];

/**
 * Structured content of a message written through the AI SDK; `Metadata` is the UIMessage
 * metadata's type (`useThread<string | PartsContent<MyMetadata>>` types a thread's messages).
 */
export interface PartsContent<Metadata = unknown> {
  text: string;
  parts: UIPart[];
  metadata?: Metadata;
  /** Set when the run ended with an error: what the model or agent reported. */
  error?: string;
}

/** The text of `parts` (text parts joined). */
export function textOf(parts: readonly UIPart[]): string {
  return parts.map((p) => (p.type === "text" ? p.text : "")).join("");
}

/** Message content for `parts` (step markers dropped): a string when they are only text. */
export function contentOf(parts: readonly UIPart[], metadata?: unknown): string | PartsContent {
  const kept = parts.filter((p) => p.type !== "step-start");
  if (metadata === undefined && kept.every((p) => p.type === "text")) return textOf(kept);
  return { text: textOf(kept), parts: kept, ...(metadata !== undefined ? { metadata } : {}) };
}

/** `content` read as parts content, or null for plain (or foreign) content. */
export function partsContent(content: unknown): PartsContent | null {
  const c = content as Partial<PartsContent> | null;
  return c && typeof c === "object" && Array.isArray(c.parts) ? c as PartsContent : null;
}

/** The text of any message content. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  const parts = partsContent(content);
  if (parts) return parts.text ?? textOf(parts.parts);
  return content === null || content === undefined ? "" : JSON.stringify(content);
}

/**
 * A chat message as a UIMessage; `streamed` is the text streamed so far when the message is
 * still being written by a run.
 */
export function toUIMessage(m: ChatMessage, streamed?: string): UIMessage {
  const role = m.role === "user" || m.role === "system" ? m.role : "assistant";
  const structured = partsContent(m.content);
  const parts: UIPart[] = structured ? structured.parts : [{
    type: "text",
    text: m.status === "streaming" && streamed !== undefined ? streamed : contentText(m.content),
  }];
  return {
    id: m.messageId,
    role,
    parts,
    ...(structured?.metadata !== undefined ? { metadata: structured.metadata } : {}),
  };
}
