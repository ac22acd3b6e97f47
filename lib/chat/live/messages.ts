/**
 * Message helpers of the live side: the recent window, store errors as reasons, and staging the
 * user message + assistant placeholder pair of a new run in one thread-log append.
 */
import type { App } from "../../config/apps.ts";
import { ApiError } from "../../http/errors.ts";
import type { ChatStore } from "../store.ts";
import type { MessageRecord, ThreadEntry } from "../types.ts";
import { LiveError } from "./runs.ts";

export { toWire, type WireMessage } from "../wire.ts";

/** Maps a store error to a live reason: 404 -> `not_found`, others -> `invalid_request: ...`. */
export function reasonOf(err: unknown): string {
  if (err instanceof LiveError) return err.reason;
  if (err instanceof ApiError) {
    if (err.status === 404) return "not_found";
    return `invalid_request: ${err.detail ?? err.title}`;
  }
  throw err;
}

/** The message windows a join and `load_older` send, read through the store. */
export class MessageWindow {
  constructor(private store: ChatStore) {}

  /** The newest `limit` messages in creation order, and whether older ones exist. */
  recent(
    app: App,
    threadId: string,
    limit: number,
  ): { messages: MessageRecord[]; hasOlder: boolean } {
    return this.store.messages.recent(app, threadId, limit);
  }

  /** Up to `limit` messages created before `before` (an id), oldest first. */
  older(
    app: App,
    threadId: string,
    before: string,
    limit: number,
  ): { messages: MessageRecord[]; hasOlder: boolean } {
    const page = this.store.messages.list(app, threadId, { before, size: limit });
    return { messages: page.items, hasOlder: page.hasPrev };
  }
}

/** Input of a new run's message pair. */
export interface PairInput {
  userMessage?: {
    id: string;
    content: unknown;
    role?: "user" | "system";
    parentId: string | null;
    forkOf?: string | null;
  };
  assistant: { id: string; parentId: string | null; msgRegenerate?: string | null };
  runId: string;
  ownerClientId: string;
}

/**
 * Stages (inside a thread-log prepare) the optional user message and the streaming assistant
 * placeholder of a run; the placeholder may have the user message of the same append as its
 * parent.
 */
export function stagePair(store: ChatStore, app: App, threadId: string, p: PairInput): {
  entries: ThreadEntry[];
  apply: () => void;
  records: MessageRecord[];
} {
  const entries: ThreadEntry[] = [];
  const applies: (() => void)[] = [];
  const records: MessageRecord[] = [];
  if (p.userMessage) {
    const u = store.messages.stageCreate(app, threadId, {
      id: p.userMessage.id,
      role: p.userMessage.role ?? "user",
      content: p.userMessage.content,
      runId: p.runId,
      ownerClientId: p.ownerClientId,
      parentId: p.userMessage.parentId,
      forkOf: p.userMessage.forkOf ?? null,
    });
    entries.push(u.entry);
    applies.push(u.apply);
    records.push(u.record);
  }
  if (p.userMessage && p.assistant.id === p.userMessage.id) {
    throw new LiveError("invalid_request: message ids must differ");
  }
  const a = store.messages.stageCreate(app, threadId, {
    id: p.assistant.id,
    role: "assistant",
    content: "",
    runId: p.runId,
    ownerClientId: p.ownerClientId,
    parentId: p.assistant.parentId,
    msgRegenerate: p.assistant.msgRegenerate ?? null,
    status: "streaming",
  }, { stagedParents: p.userMessage ? [p.userMessage.id] : [] });
  entries.push(a.entry);
  applies.push(a.apply);
  records.push(a.record);
  return { entries, apply: () => applies.forEach((f) => f()), records };
}
