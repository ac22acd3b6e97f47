/**
 * ChatAgent: the agent side of a thread (`connectAgent`). A thin API over the session's raw
 * pushes: pick up pending runs, start them, stream tokens, suspend for tool approval, resume,
 * end. See docs/chat-live.md "Agent API".
 */
import type { RunInfo } from "./chat_types.ts";
import type { ChatSession } from "./chat_session.ts";
import type { ChatView } from "./chat_view.ts";

/** A tool call the agent wants a human to approve. */
export interface ToolRequest {
  toolName: string;
  args?: Record<string, unknown>;
  /** Defaults to a generated UUID. */
  toolCallId?: string;
}

/** An agent joined to one thread. */
export class ChatAgent {
  readonly session: ChatSession;
  #announced = new Set<string>();

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
  on(event: string, cb: (payload: any) => void): void {
    this.session.view.on(event, cb);
  }

  /** Removes a handler. */
  off(event: string, cb: (payload: any) => void): void {
    this.session.view.off(event, cb);
  }

  /** pending -> active. Resolves with the RunInfo. */
  async startRun(runId: string): Promise<RunInfo> {
    const r = await this.session.request("run:start", { runId });
    return r.run as RunInfo;
  }

  /** Appends token text to an active run (rolled up server-side every 40 ms). */
  token(runId: string, text: string): Promise<void> {
    return this.session.request("token", { runId, text }).then(() => {});
  }

  /** active -> suspended, waiting for approveTool / rejectTool; resolves with the toolCallId. */
  async suspend(runId: string, tool: ToolRequest): Promise<string> {
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
  push(event: string, payload: Record<string, unknown> = {}): Promise<any> {
    return this.session.push(event, payload);
  }

  /** Leaves the thread. */
  close(): void {
    this.session.close();
  }

  #announce(): void {
    const runs = this.session.view.runs();
    if (runs.some((r) => r.status === "active" || r.status === "suspended")) return;
    const next = runs.find((r) => r.status === "pending" && !this.#announced.has(r.runId));
    if (!next) return;
    this.#announced.add(next.runId);
    this.session.view.emit("run:pending", next);
  }
}
