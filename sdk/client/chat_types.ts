/** Wire shapes of the chat thread channel, shared by the ChatClient pieces (docs/chat-live.md). */
import type { ChatMessage, RunInfo, RunStatus, SuspendedTool } from "../shared/chat_wire.ts";

export type {
  ChatMessage,
  MessageRole,
  MessageStatus,
  RunInfo,
  RunStatus,
  SuspendedTool,
} from "../shared/chat_wire.ts";

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

/** A push's ok reply (its fields depend on the event). */
export type PushReply = Record<string, unknown>;

/** The events of a thread (session, view and agent) and what each handler receives. */
export interface ChatEvents {
  /** The view changed (messages, runs, streams): re-render. */
  update: undefined;
  /** A run was added or changed. */
  run: RunInfo;
  "run:start": { runId: string; ownerClientId: string; startedAt: number };
  "run:suspend": { runId: string } & SuspendedTool;
  "run:suspended": { runId: string } & SuspendedTool;
  "run:resume": { runId: string };
  "run:end": { runId: string; reason: RunStatus; endedAt: number };
  /** Agents: a run was cancelled (`by` the client that did it). */
  "run:cancel": { runId: string; reason?: string; by?: string };
  /** Agents: a pending run is ready to start (oldest first, once). */
  "run:pending": RunInfo;
  "tool:approved": { runId: string; toolCallId: string; clientId?: string };
  "tool:rejected": { runId: string; toolCallId: string; clientId?: string; reason?: string };
  /** Joined (again, `rejoin: true`, after a lost connection). */
  joined: { logId: number; rejoin: boolean };
  /** The connection was lost; the thread rejoins by itself. */
  disconnected: Record<string, never>;
  /** A rejoin or the connection failed (a `ConnectionError` when the server refused it). */
  error: Error;
}

/** A chat event handler. */
export type ChatEventHandler<E extends keyof ChatEvents> = (payload: ChatEvents[E]) => void;

/** Minimal event emitter used by the session and the view. */
export class Emitter {
  #handlers = new Map<string, Set<(payload: never) => void>>();

  /** Registers `cb` for `event` (typed for the events of `ChatEvents`). */
  on<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  on(event: string, cb: (payload: unknown) => void): void;
  on(event: string, cb: (payload: never) => void): void {
    let set = this.#handlers.get(event);
    if (!set) this.#handlers.set(event, set = new Set());
    set.add(cb);
  }

  /** Removes `cb` from `event`. */
  off<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  off(event: string, cb: (payload: unknown) => void): void;
  off(event: string, cb: (payload: never) => void): void {
    this.#handlers.get(event)?.delete(cb);
  }

  /**
   * Calls every handler of `event`; a throwing handler does not stop the others. A handler's
   * failure, thrown or (an async handler) rejected, is logged, never an unhandled rejection.
   */
  emit(event: string, payload?: unknown): void {
    const failed = (err: unknown) => console.error(`chat ${event} handler failed:`, err);
    for (const cb of [...(this.#handlers.get(event) ?? [])] as ((p: unknown) => unknown)[]) {
      try {
        const r = cb(payload);
        if (r instanceof Promise) r.catch(failed);
      } catch (err) {
        failed(err);
      }
    }
  }
}
