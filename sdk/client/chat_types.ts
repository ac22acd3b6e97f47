/** Wire shapes of the chat thread channel, shared by the ChatClient pieces (docs/chat-live.md). */

/** A chat message as the thread channel carries it (spec "Chat message (wire shape)"). */
export interface ChatMessage {
  messageId: string;
  runId: string | null;
  ownerClientId: string | null;
  role: string;
  content: unknown;
  parentId: string | null;
  forkOf: string | null;
  msgRegenerate: string | null;
  status: "streaming" | "complete" | "cancelled" | "error" | string;
  createdAt: number;
  [extra: string]: unknown;
}

/** A suspended tool call waiting for a human decision. */
export interface SuspendedTool {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
}

/** Run status values (spec "States and transitions"). */
export type RunStatus = "pending" | "active" | "suspended" | "complete" | "cancelled" | "error";

/** RunInfo (spec wire shape) plus the documented extension fields. */
export interface RunInfo {
  runId: string;
  ownerClientId: string;
  status: RunStatus;
  startedAt: number;
  endedAt: number | null;
  suspendedTool: SuspendedTool | null;
  parentId: string | null;
  forkOf: string | null;
  msgRegenerate: string | null;
  /** Extension: the assistant message this run streams into. */
  messageId: string;
  /** Extension: creation time (runs are listed in this order). */
  createdAt: number;
  /** Extension: the human decision on the suspended tool call, null until made. */
  toolDecision: "approved" | "rejected" | null;
  [extra: string]: unknown;
}

/** The join reply of a thread channel. */
export interface ThreadSnapshot {
  log_id: number;
  messages: ChatMessage[];
  runs: RunInfo[];
  streams: Record<string, string>;
  has_older: boolean;
  client_id?: string;
  /** The thread stream's epoch; a hard delete starts a new one. */
  epoch?: string;
  /** With `after_log_id`: `"reset"` when it could not be resumed (older than the retained
   * log, or from another epoch): the state must be replaced; else `"complete"`. */
  replay?: string;
  /** With `after_log_id`: the oldest retained log_id. */
  first_log_id?: number;
  /** Deprecated (the server sends it for one more release): `replay === "reset"`. */
  reset?: boolean;
}

/** One slot change of a compaction `batch`. */
export interface BatchOp {
  op: "set" | "delete";
  slot: string;
  value?: unknown;
}

/** Terminal run statuses. */
export const TERMINAL: ReadonlySet<string> = new Set(["complete", "cancelled", "error"]);

/** Minimal event emitter used by the session and the view. */
export class Emitter {
  #handlers = new Map<string, Set<(payload: any) => void>>();

  /** Registers `cb` for `event`. */
  on(event: string, cb: (payload: any) => void): void {
    let set = this.#handlers.get(event);
    if (!set) this.#handlers.set(event, set = new Set());
    set.add(cb);
  }

  /** Removes `cb` from `event`. */
  off(event: string, cb: (payload: any) => void): void {
    this.#handlers.get(event)?.delete(cb);
  }

  /** Calls every handler of `event`; a throwing handler does not stop the others. */
  emit(event: string, payload?: unknown): void {
    for (const cb of [...(this.#handlers.get(event) ?? [])]) {
      try {
        cb(payload);
      } catch (err) {
        console.error(`chat ${event} handler failed:`, err);
      }
    }
  }
}
