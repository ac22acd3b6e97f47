/**
 * ChatAgent: the agent side of a thread (`connectAgent`). A thin API over the session's raw
 * pushes: pick up pending runs, start them, stream tokens, suspend for tool approval, resume,
 * end. See docs/chat-live.md "Agent API".
 */
import type { ChatEventHandler, ChatEvents, PushReply, RunInfo } from "./chat_types.ts";
import type { ChatSession } from "./chat_session.ts";
import type { ChatView } from "./chat_view.ts";

/** A tool call the agent wants a human to approve. */
export interface ToolRequest {
  toolName: string;
  args?: Record<string, unknown>;
  /** Defaults to a generated UUID. */
  toolCallId?: string;
}

/**
 * Tokens of a run are held this long (ms) and sent as one `token` push ... A quarter of the
 * server's 40 ms roll-up: it halves the frames of 5 ms (server and agent CPU per run fall by a
 * quarter) while adding at most 10 ms to a token's way to viewers (measured:
 * bench/results/2026-11-25-full-run-b5abfd5.md).
 */
export const TOKEN_FLUSH_MS = 10;
/** ... or sooner once this many characters are held. */
export const TOKEN_FLUSH_CHARS = 4096;

/** Tokens of one run waiting to be sent, with the callers waiting for their reply. */
interface TokenBatch {
  text: string;
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
  timer: ReturnType<typeof setTimeout>;
}

/** An agent joined to one thread. */
export class ChatAgent {
  readonly session: ChatSession;
  #announced = new Set<string>();
  #batches = new Map<string, TokenBatch>();

  constructor(session: ChatSession) {
    this.session = session;
    // A pending run is announced once, oldest first, when no run of the thread is active or
    // suspended (runs queue on the server the same way).
    session.view.on("update", () => this.#announce());
    session.view.on("joined", () => this.#announce());
  }

  /** The thread id. */
  get threadId(): string {
    return this.session.threadId;
  }

  /** The app key. */
  get appKey(): string {
    return this.session.appKey;
  }

  /** The thread view (messages, runs, streams). */
  get view(): ChatView {
    return this.session.view;
  }

  /**
   * Events: `run:pending` (RunInfo, a run ready to start), `tool:approved` / `tool:rejected`
   * (`{ runId, toolCallId, clientId, reason? }`), `run:cancel` (`{ runId, reason, by }`), and
   * every view event.
   */
  on<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  on(event: string, cb: (payload: unknown) => void): void;
  on(event: string, cb: (payload: never) => void): void {
    this.session.view.on(event, cb as (payload: unknown) => void);
  }

  /** Removes a handler. */
  off<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  off(event: string, cb: (payload: unknown) => void): void;
  off(event: string, cb: (payload: never) => void): void {
    this.session.view.off(event, cb as (payload: unknown) => void);
  }

  /** pending -> active. Resolves with the RunInfo. */
  async startRun(runId: string): Promise<RunInfo> {
    const r = await this.session.request("run:start", { runId });
    return r.run as RunInfo;
  }

  /**
   * Appends token text to an active run. Tokens are coalesced: held for up to TOKEN_FLUSH_MS
   * (or TOKEN_FLUSH_CHARS) and sent as one push, well inside the server's 40 ms roll-up, so a
   * fast model costs a few frames per roll-up instead of one per token. Order is kept (pushes
   * of one socket are handled in order, and lifecycle calls flush first). Resolves once the
   * push holding `text` is accepted; rejects with its error (e.g. the run was cancelled, or
   * `closed` when the session closed while the text was held). A caller may leave the promise
   * alone: its failure is then no unhandled rejection (the next lifecycle call fails too).
   */
  token(runId: string, text: string): Promise<void> {
    let batch = this.#batches.get(runId);
    if (!batch) {
      batch = {
        text: "",
        waiters: [],
        timer: setTimeout(() => this.#flushTokens(runId), TOKEN_FLUSH_MS),
      };
      this.#batches.set(runId, batch);
    }
    batch.text += text;
    const done = new Promise<void>((resolve, reject) => batch!.waiters.push({ resolve, reject }));
    done.catch(() => {}); // a caller that awaits still gets the error
    if (batch.text.length >= TOKEN_FLUSH_CHARS) this.#flushTokens(runId);
    return done;
  }

  /** Sends the held tokens of `runId` now (before a lifecycle push, so order is kept). */
  #flushTokens(runId: string): void {
    const batch = this.#batches.get(runId);
    if (!batch) return;
    this.#batches.delete(runId);
    clearTimeout(batch.timer);
    this.session.request("token", { runId, text: batch.text }).then(
      () => batch.waiters.forEach((w) => w.resolve()),
      (err) => batch.waiters.forEach((w) => w.reject(err)),
    );
  }

  /** active -> suspended, waiting for approveTool / rejectTool; resolves with the toolCallId. */
  async suspend(runId: string, tool: ToolRequest): Promise<string> {
    this.#flushTokens(runId);
    const toolCallId = tool.toolCallId ?? crypto.randomUUID();
    await this.session.request("run:suspend", {
      runId,
      toolCallId,
      toolName: tool.toolName,
      args: tool.args ?? {},
    });
    return toolCallId;
  }

  /** suspended -> active. */
  async resume(runId: string): Promise<void> {
    await this.session.request("run:resume", { runId });
  }

  /** Ends a run (`complete` or `error`); `content` replaces the streamed text when given. */
  async end(
    runId: string,
    reason: "complete" | "error" = "complete",
    content?: unknown,
  ): Promise<void> {
    this.#flushTokens(runId);
    await this.session.request("run:end", {
      runId,
      reason,
      ...(content !== undefined ? { content } : {}),
    });
  }

  /** Posts a standalone assistant message (`publish:message`). */
  async message(
    content: unknown,
    opts: { messageId?: string; parentId?: string } = {},
  ): Promise<string> {
    const r = await this.session.request("message", { content, ...opts });
    return r.messageId as string;
  }

  /** Raw push. */
  push(event: string, payload: Record<string, unknown> = {}): Promise<PushReply> {
    return this.session.push(event, payload);
  }

  /** Leaves the thread. */
  close(): void {
    this.session.close();
  }

  #announce(): void {
    const runs = this.session.view.runs();
    // A run announced but not started yet holds the queue too: announcing the next one then
    // would have the agent start it while the server still runs the first (invalid_state).
    const busy = (r: { runId: string; status: string }) =>
      r.status === "active" || r.status === "suspended" ||
      (r.status === "pending" && this.#announced.has(r.runId));
    if (runs.some(busy)) return;
    const next = runs.find((r) => r.status === "pending" && !this.#announced.has(r.runId));
    if (!next) return;
    this.#announced.add(next.runId);
    this.session.view.emit("run:pending", next);
  }
}
