/**
 * The agent side: drive a Switchboard run from an AI SDK `UIMessageChunk` stream (as
 * `streamText(...).toUIMessageStream()` gives it). Text deltas become run tokens (coalesced
 * by the agent into a few frames; the server rolls them up every 40 ms for viewers); a tool call
 * that needs approval suspends the run until a human decides; a human cancel aborts; the
 * final message keeps every part (reasoning, tools, text) and the metadata.
 */
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import type { ChatAgent } from "../client/mod.ts";
import { contentOf } from "./ui_message.ts";

/** What `onToolApproval` is told once a human decided a tool call. */
export interface ToolDecision {
  /** The assistant message so far, its tool part already marked `approval-responded`. */
  message: UIMessage;
  toolCallId: string;
  approved: boolean;
  reason?: string;
  /** Aborts when the run is cancelled: hand it to the next `streamText`. */
  signal: AbortSignal;
}

/** Options of `pipeUIMessageStream`. */
export interface PipeOptions {
  /**
   * After a human approved or rejected a tool call: return the stream that continues the
   * answer (typically `streamText` over the conversation plus `decision.message`), or nothing
   * to end the run there.
   */
  onToolApproval?(
    decision: ToolDecision,
  ):
    | ReadableStream<UIMessageChunk>
    | undefined
    | Promise<ReadableStream<UIMessageChunk> | undefined>;
  /** Aborted when the run is cancelled; defaults to `cancelSignal(agent, runId)`. */
  signal?: AbortSignal;
}

/** How the run ended. */
export type PipeOutcome = "complete" | "error" | "cancelled";

/** An AbortSignal that aborts when a human cancels `runId` (pass it to `streamText`). */
export function cancelSignal(agent: ChatAgent, runId: string): AbortSignal {
  const controller = new AbortController();
  const onCancel = (p: { runId?: string }) => {
    if (p?.runId !== runId) return;
    agent.off("run:cancel", onCancel);
    controller.abort(new Error("run cancelled"));
  };
  agent.on("run:cancel", onCancel);
  return controller.signal;
}

/**
 * Starts `runId` (when pending), forwards `stream` into it and ends it: `complete` with the
 * final message (all parts), or `error` when the stream reports or throws an error. A human
 * cancel stops reading at once (the server has already ended the run). Resolves with the
 * outcome.
 */
export async function pipeUIMessageStream(
  agent: ChatAgent,
  runId: string,
  stream: ReadableStream<UIMessageChunk>,
  options: PipeOptions = {},
): Promise<PipeOutcome> {
  const signal = options.signal ?? cancelSignal(agent, runId);
  if (agent.view.run(runId)?.status === "pending") await agent.startRun(runId);
  const tokens = new TokenWriter(agent, runId);
  let message: UIMessage | undefined;
  let next: ReadableStream<UIMessageChunk> | undefined = stream;
  try {
    while (next) {
      const [mine, forMessage] = next.tee();
      const built = lastMessage(readUIMessageStream({ message, stream: forMessage }));
      const segment = await forward(mine, tokens, signal);
      if (segment.kind === "cancelled") return "cancelled";
      message = await built ?? message;
      await tokens.flushed();
      if (segment.kind === "error") {
        await end(agent, runId, "error", message, segment.errorText);
        return "error";
      }
      if (segment.kind === "done") break;
      const { toolCallId, toolName, input, approvalId } = segment;
      await agent.suspend(runId, {
        toolCallId,
        toolName,
        args: (input ?? {}) as Record<string, unknown>,
      });
      const decision = await decided(agent, runId, toolCallId, signal);
      if (!decision) return "cancelled";
      await agent.resume(runId);
      message = respond(message, toolCallId, approvalId, decision);
      next = await options.onToolApproval?.({ message: message!, toolCallId, ...decision, signal });
    }
    await end(agent, runId, "complete", message);
    return "complete";
  } catch (err) {
    if (signal.aborted) return "cancelled";
    await tokens.flushed().catch(() => {});
    await end(agent, runId, "error", message, err instanceof Error ? err.message : String(err))
      .catch(() => {});
    return "error";
  }
}

/** How one stream segment ended. */
type Segment =
  | { kind: "done" }
  | { kind: "cancelled" }
  | { kind: "error"; errorText: string }
  | { kind: "approval"; toolCallId: string; toolName: string; input: unknown; approvalId: string };

/** Reads one stream: tokens out, tool inputs remembered, until it ends or asks for approval. */
async function forward(
  stream: ReadableStream<UIMessageChunk>,
  tokens: TokenWriter,
  signal: AbortSignal,
): Promise<Segment> {
  const reader = stream.getReader();
  const inputs = new Map<string, { toolName: string; input: unknown }>();
  let approval: Segment | undefined;
  const onAbort = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", onAbort);
  try {
    while (true) {
      if (signal.aborted) return { kind: "cancelled" };
      const { done, value } = await reader.read();
      if (signal.aborted) return { kind: "cancelled" };
      if (done) return approval ?? { kind: "done" };
      switch (value.type) {
        case "text-delta":
          tokens.write(value.delta);
          break;
        case "tool-input-available":
          inputs.set(value.toolCallId, { toolName: value.toolName, input: value.input });
          break;
        case "tool-approval-request": {
          const tool = inputs.get(value.toolCallId);
          approval = {
            kind: "approval",
            toolCallId: value.toolCallId,
            toolName: tool?.toolName ?? "tool",
            input: tool?.input,
            approvalId: value.approvalId,
          };
          break;
        }
        case "error":
          return { kind: "error", errorText: value.errorText };
      }
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}

/** Waits for the human decision on `toolCallId` (null when the run is cancelled first). */
function decided(agent: ChatAgent, runId: string, toolCallId: string, signal: AbortSignal) {
  return new Promise<{ approved: boolean; reason?: string } | null>((resolve) => {
    const done = (v: { approved: boolean; reason?: string } | null) => {
      agent.off("tool:approved", onApproved);
      agent.off("tool:rejected", onRejected);
      signal.removeEventListener("abort", onAbort);
      resolve(v);
    };
    const match = (p: { runId?: string; toolCallId?: string }) =>
      p?.runId === runId && p?.toolCallId === toolCallId;
    const onApproved = (p: { runId?: string; toolCallId?: string }) =>
      match(p) && done({ approved: true });
    const onRejected = (p: { runId?: string; toolCallId?: string; reason?: string }) =>
      match(p) && done({ approved: false, ...(p.reason ? { reason: p.reason } : {}) });
    const onAbort = () => done(null);
    agent.on("tool:approved", onApproved);
    agent.on("tool:rejected", onRejected);
    signal.addEventListener("abort", onAbort);
    // Decided before we listened (a fast human, or a replay after a reconnect).
    const run = agent.view.run(runId);
    if (run?.toolDecision && run.suspendedTool?.toolCallId === toolCallId) {
      done({ approved: run.toolDecision === "approved" });
    }
  });
}

/** `message` with the tool part of `toolCallId` marked as answered. */
function respond(
  message: UIMessage | undefined,
  toolCallId: string,
  approvalId: string,
  decision: { approved: boolean; reason?: string },
): UIMessage | undefined {
  if (!message) return message;
  const parts = message.parts.map((p) => {
    const tool = p as { toolCallId?: string; state?: string };
    if (tool.toolCallId !== toolCallId) return p;
    return {
      ...p,
      state: "approval-responded",
      approval: { id: approvalId, ...decision },
    } as typeof p;
  });
  return { ...message, parts };
}

/** Ends the run with the final message's parts (and the error text, if any). */
async function end(
  agent: ChatAgent,
  runId: string,
  reason: "complete" | "error",
  message?: UIMessage,
  error?: string,
) {
  const parts = message?.parts ?? [];
  const content = contentOf(parts, message?.metadata);
  if (reason === "error") {
    const structured = typeof content === "string"
      ? { text: content, parts: parts.filter((p) => p.type !== "step-start") }
      : content;
    return await agent.end(runId, "error", { ...structured, error: error ?? "error" });
  }
  await agent.end(runId, "complete", content === "" && parts.length === 0 ? undefined : content);
}

/** The last message a UIMessage stream reader yields. */
async function lastMessage(messages: AsyncIterable<UIMessage>): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const m of messages) last = m;
  return last;
}

/**
 * Token pushes for one run. ChatAgent.token coalesces them into few frames; this only keeps
 * the first error, so the run ends with it.
 */
class TokenWriter {
  #pending: Promise<void>[] = [];
  #error: unknown;

  constructor(private agent: ChatAgent, private runId: string) {}

  /** Sends `text` (coalesced by the agent). */
  write(text: string): void {
    if (text === "" || this.#error) return;
    this.#pending.push(
      this.agent.token(this.runId, text).catch((err) => void (this.#error ??= err)),
    );
  }

  /** Resolves once everything written has been accepted (rejects with a push error). */
  async flushed(): Promise<void> {
    await Promise.all(this.#pending.splice(0));
    if (this.#error) throw this.#error;
  }
}
