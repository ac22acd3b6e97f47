/**
 * ChatView: the client-side state of one thread (messages of every branch, runs, token
 * streams, log position) rebuilt from the join snapshot, replayed entries and live events.
 * Pure state plus thin push helpers; the session feeds it frames in wire order.
 */
import {
  type BatchOp,
  type ChatMessage,
  Emitter,
  type PushReply,
  type RunInfo,
  type SuspendedTool,
  TERMINAL,
  type ThreadSnapshot,
} from "./chat_types.ts";
import { StreamCursor } from "./stream_cursor.ts";

/** What the view needs from its session to send pushes. */
export interface ViewTransport {
  readonly threadId: string;
  readonly clientId: string;
  /** Pushes an event; resolves with the ok response or rejects with an Error whose `reason` is set. */
  request(event: string, payload: Record<string, unknown>): Promise<PushReply>;
}

/** The reply to send, edit and regenerate. */
interface RunReply {
  runId: string;
  messageId: string;
  forkOf?: string | null;
  regeneratesMessageId?: string | null;
  serial: number;
}

/** A run started by send, edit or regenerate (spec "ActiveRun"). */
export class ActiveRun {
  readonly runId: string;
  readonly messageId: string;
  readonly forkOf: string | null;
  readonly regeneratesMessageId: string | null;
  /** log_id of the entry that created the run. */
  readonly serial: number;
  #view: ChatView;

  constructor(view: ChatView, r: {
    runId: string;
    messageId: string;
    forkOf?: string | null;
    regeneratesMessageId?: string | null;
    serial: number;
  }) {
    this.#view = view;
    this.runId = r.runId;
    this.messageId = r.messageId;
    this.forkOf = r.forkOf ?? null;
    this.regeneratesMessageId = r.regeneratesMessageId ?? null;
    this.serial = r.serial;
  }

  /** The run's current status as this view knows it. */
  get status(): string {
    return this.#view.run(this.runId)?.status ?? "pending";
  }

  /** Cancels the run (`cancel_own`, or `publish:cancel_any`). */
  cancel(): Promise<void> {
    return this.#view.cancel(this.runId);
  }

  /** `{ threadId, runId }`. */
  toJSON(): { threadId: string; runId: string } {
    return { threadId: this.#view.threadId, runId: this.runId };
  }
}

const ROOT = "\u0000root";

function uuid(): string {
  return crypto.randomUUID();
}

/** The thread state and the spec's view methods (reading and sending). */
export class ChatView extends Emitter {
  #t: ViewTransport;
  #messages = new Map<string, ChatMessage>();
  #order: string[] = [];
  #runs = new Map<string, RunInfo>();
  #streams = new Map<string, string>();
  #selected = new Map<string, string>();
  #hasOlder = false;
  /** The log position and epoch applied so far; a rejoin resumes from it. */
  readonly #cursor = new StreamCursor("log_id");
  #head: unknown = null;

  constructor(transport: ViewTransport) {
    super();
    this.#t = transport;
  }

  /** The thread id. */
  get threadId(): string {
    return this.#t.threadId;
  }

  /** Current log position: the log_id of the latest applied entry. */
  get logId(): number {
    return this.#cursor.offset ?? 0;
  }

  /** The epoch `logId` belongs to (sent back on rejoin so a deleted thread is noticed). */
  get epoch(): string | undefined {
    return this.#cursor.epoch;
  }

  /** The join params that resume from here (`after_log_id` + `epoch`; none before a position
   * is known). */
  resumeParams(): Record<string, unknown> {
    return this.#cursor.params();
  }

  /** The `head` slot of the last compaction batch (`{ messageId, runId, logId }`), or null. */
  get head(): unknown {
    return this.#head;
  }

  // ---- reading -------------------------------------------------------------------------

  /** Messages of the selected branch, root first. */
  getMessages(): ChatMessage[] {
    const kids = this.#children();
    const out: ChatMessage[] = [];
    const seen = new Set<string>();
    let cur = ROOT;
    while (true) {
      const list = kids.get(cur);
      if (!list || list.length === 0) break;
      const sel = this.#selected.get(cur);
      const pick = sel && list.includes(sel) ? sel : list[list.length - 1];
      if (seen.has(pick)) break;
      seen.add(pick);
      out.push(this.#messages.get(pick)!);
      cur = pick;
    }
    return out;
  }

  /** Every loaded message of every branch, in thread order. */
  getChannelMessages(): ChatMessage[] {
    return this.#order.map((id) => this.#messages.get(id)!);
  }

  /** Ids of the messages sharing `parentId` (null for roots), oldest first. */
  siblings(parentId: string | null): string[] {
    return this.#children().get(parentId ?? ROOT) ?? [];
  }

  /** Every known run, oldest first. */
  runs(): RunInfo[] {
    return [...this.#runs.values()].sort((a, b) =>
      a.createdAt - b.createdAt || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0)
    );
  }

  /** One run by id. */
  run(runId: string): RunInfo | undefined {
    return this.#runs.get(runId);
  }

  /** Whether older messages can be fetched with loadOlder. */
  hasOlder(): boolean {
    return this.#hasOlder;
  }

  /** Accumulated token text of a streaming run; "" when none. */
  getStream(runId: string): string {
    return this.#streams.get(runId) ?? "";
  }

  // ---- sending -------------------------------------------------------------------------

  /** Sends a user message; resolves when the server stored it with its pending run. */
  async send(
    text: unknown,
    opts: { parentId?: string | null; messageId?: string; runId?: string; role?: string } = {},
  ): Promise<ActiveRun> {
    const tip = this.getMessages().at(-1);
    const parentId = opts.parentId !== undefined ? opts.parentId : tip?.messageId ?? null;
    const r = await this.#t.request("send", {
      content: text,
      messageId: opts.messageId ?? uuid(),
      runId: opts.runId ?? uuid(),
      parentId,
      ...(opts.role ? { role: opts.role } : {}),
    });
    return new ActiveRun(this, r as unknown as RunReply);
  }

  /** Starts a new assistant answer for `messageId` (an assistant message), as a sibling. */
  async regenerate(
    messageId: string,
    opts: { runId?: string; parentId?: string } = {},
  ): Promise<ActiveRun> {
    const r = await this.#t.request("regenerate", {
      messageId,
      runId: opts.runId ?? uuid(),
      ...(opts.parentId !== undefined ? { parentId: opts.parentId } : {}),
    });
    return new ActiveRun(this, r as unknown as RunReply);
  }

  /** Forks `messageId`: a new message with the new content beside it, and a new run. */
  async edit(
    messageId: string,
    content: unknown,
    opts: { newMessageId?: string; runId?: string } = {},
  ): Promise<ActiveRun> {
    const r = await this.#t.request("edit", {
      messageId,
      content,
      newMessageId: opts.newMessageId ?? uuid(),
      runId: opts.runId ?? uuid(),
    });
    return new ActiveRun(this, r as unknown as RunReply);
  }

  /** Loads up to `limit` messages older than the oldest loaded one. */
  async loadOlder(limit = 50): Promise<ChatMessage[]> {
    const before = this.#order[0];
    const r = await this.#t.request("load_older", { before: before ?? null, limit });
    const fresh = (r.messages as ChatMessage[]).filter((m) => !this.#messages.has(m.messageId));
    for (const m of fresh) this.#messages.set(m.messageId, m);
    this.#order.unshift(...fresh.map((m) => m.messageId));
    for (const run of (r.runs ?? []) as RunInfo[]) {
      if (!this.#runs.has(run.runId)) this.#runs.set(run.runId, run);
    }
    this.#hasOlder = !!r.has_older;
    this.emit("update");
    return r.messages as ChatMessage[];
  }

  /** Shows `messageId` at the fork under `parentId` (null for the first message). */
  selectSibling(parentId: string | null, messageId: string): void {
    this.#selected.set(parentId ?? ROOT, messageId);
    this.emit("update");
  }

  /** Approves the suspended tool call of a run. */
  async approveTool(runId: string, toolCallId: string): Promise<void> {
    await this.#t.request("tool:approve", { runId, toolCallId });
  }

  /** Rejects the suspended tool call of a run. */
  async rejectTool(runId: string, toolCallId: string, reason?: string): Promise<void> {
    await this.#t.request("tool:reject", { runId, toolCallId, ...(reason ? { reason } : {}) });
  }

  /** Cancels a run. */
  async cancel(runId: string): Promise<void> {
    await this.#t.request("cancel", { runId });
  }

  // ---- applying the wire ---------------------------------------------------------------

  /** Starts a fresh view at `logId` (connect's `afterLogId`): replay applies from there. */
  seek(logId: number): void {
    if (this.#order.length === 0 && this.logId === 0) this.#cursor.seek(logId);
  }

  /** Forgets every message, run and streaming text (reset, thread deleted). */
  #clear(): void {
    this.#messages.clear();
    this.#order = [];
    this.#runs.clear();
    this.#streams.clear();
  }

  /** Applies a join reply. A first join (or `reset`) replaces the state; a rejoin merges. */
  applySnapshot(s: ThreadSnapshot, firstJoin: boolean): void {
    const reset = this.#cursor.joined(s as unknown as Record<string, unknown>);
    if (reset) this.#clear();
    if (firstJoin || reset) this.#hasOlder = !!s.has_older;
    for (const m of s.messages) this.#upsertMessage(m);
    for (const r of s.runs) this.#runs.set(r.runId, r);
    this.#streams = new Map(Object.entries(s.streams ?? {}));
    this.emit("update");
  }

  /** Applies one pushed or broadcast event (in wire order). */
  apply(event: string, payload: Record<string, unknown>): void {
    const p = payload as Record<string, any>;
    if (event === "thread:deleted") {
      // The thread was hard-deleted: its log restarts at 1 in a new epoch.
      this.#clear();
      this.#cursor.purged(p?.epoch);
      this.emit("update");
      return;
    }
    // A position already applied is a replay overlap: skipped.
    if (typeof p?.log_id === "number" && !this.#cursor.advance(p.log_id)) return;
    switch (event) {
      case "stream":
        this.#applyStream(p.runId, String(p.text ?? ""), Number(p.offset ?? 0));
        break;
      case "run:start":
        this.#setRun(p.run);
        this.emit("run:start", {
          runId: p.runId,
          ownerClientId: p.ownerClientId,
          startedAt: p.startedAt,
        });
        break;
      case "run:suspend":
      case "run:suspended":
        this.#setRun(p.run);
        this.emit(event, toolPayload(p));
        break;
      case "run:resume":
        this.#setRun(p.run);
        this.emit("run:resume", { runId: p.runId });
        break;
      case "run:end": {
        const run = this.#runs.get(p.runId);
        if (run) {
          this.#runs.set(p.runId, {
            ...run,
            status: p.reason,
            endedAt: p.endedAt,
            suspendedTool: null,
          });
          // The finalised message follows in the same append; until it is applied, show the
          // streamed text in the message so an ended run never reads as an empty answer.
          const msg = this.#messages.get(run.messageId);
          const streamed = this.#streams.get(p.runId);
          if (msg && streamed) this.#messages.set(msg.messageId, { ...msg, content: streamed });
        }
        this.emit("run:end", { runId: p.runId, reason: p.reason, endedAt: p.endedAt });
        break;
      }
      case "batch":
        for (const op of (p.ops ?? []) as BatchOp[]) this.#applySlot(op);
        break;
      case "message:deleted":
        if (p.hard) this.#removeMessage(p.messageId);
        else if (p.message) this.#upsertMessage(p.message);
        break;
      case "tool:approved":
      case "tool:rejected": {
        this.#setRun(p.run);
        const { run: _run, log_id: _l, ...decision } = p;
        this.emit(event, decision);
        break;
      }
      default:
        if (p?.run && typeof p.run === "object") this.#setRun(p.run);
        if (p?.message && typeof p.message === "object") this.#upsertMessage(p.message);
        if (Array.isArray(p?.messages)) { for (const m of p.messages) this.#upsertMessage(m); }
        if (
          event === "run" || event === "message" || p?.run || p?.message ||
          typeof p?.log_id === "number"
        ) break;
        return; // unknown, non-log event: no state change
    }
    this.emit("update");
  }

  #applySlot(op: BatchOp): void {
    const colon = op.slot.indexOf(":");
    const kind = colon < 0 ? op.slot : op.slot.slice(0, colon);
    const id = colon < 0 ? "" : op.slot.slice(colon + 1);
    if (kind === "message" && op.op === "set") this.#upsertMessage(op.value as ChatMessage);
    else if (kind === "run" && op.op === "set") this.#setRun(op.value as RunInfo);
    else if (kind === "stream" && op.op === "delete") this.#streams.delete(id);
    else if (kind === "head") this.#head = op.op === "set" ? op.value : null;
  }

  #applyStream(runId: string, text: string, offset: number): void {
    const cur = this.#streams.get(runId) ?? "";
    if (offset > cur.length) return; // a gap cannot happen on one socket; ignore defensively
    this.#streams.set(runId, cur.slice(0, offset) + text);
  }

  #setRun(run: RunInfo | undefined): void {
    if (!run) return;
    this.#runs.set(run.runId, run);
    if (TERMINAL.has(run.status)) this.#streams.delete(run.runId);
    this.emit("run", run);
  }

  #removeMessage(id: string): void {
    if (!this.#messages.delete(id)) return;
    this.#order = this.#order.filter((x) => x !== id);
  }

  #upsertMessage(raw: ChatMessage | (Omit<ChatMessage, "messageId"> & { id: string })): void {
    if (!raw || typeof raw !== "object") return;
    // Store records (REST events) carry `id`; the wire shape is `messageId`.
    let m = raw as ChatMessage;
    if (typeof m.messageId !== "string" && typeof (raw as { id?: unknown }).id === "string") {
      const { id, ...rest } = raw as { id: string };
      m = { messageId: id, ...rest } as unknown as ChatMessage;
    }
    if (typeof m.messageId !== "string") return;
    if (!this.#messages.has(m.messageId)) this.#order.push(m.messageId);
    this.#messages.set(m.messageId, m);
  }

  #children(): Map<string, string[]> {
    const kids = new Map<string, string[]>();
    for (const id of this.#order) {
      const m = this.#messages.get(id)!;
      const parent = m.parentId && this.#messages.has(m.parentId) ? m.parentId : ROOT;
      let list = kids.get(parent);
      if (!list) kids.set(parent, list = []);
      list.push(id);
    }
    return kids;
  }
}

function toolPayload(p: Record<string, any>): { runId: string } & SuspendedTool {
  return { runId: p.runId, toolCallId: p.toolCallId, toolName: p.toolName, args: p.args };
}
