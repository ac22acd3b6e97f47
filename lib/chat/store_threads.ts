/**
 * Thread service functions: create, read, list with filters, update, status transitions and
 * hard delete. Writes go through the thread log (events in thread_log.ts).
 */
import type { App } from "../config/apps.ts";
import { conflict, notFound, unprocessable } from "./errors.ts";
import type { Collection, Page, PageQuery } from "./store_collection.ts";
import type { ThreadLog } from "./thread_log.ts";
import type { MessageRecord, Participant, Reaction, Thread, ThreadStatus } from "./types.ts";

/** Status-changing actions (the REST action routes, plus `reopen` via PATCH status=open). */
export type ThreadAction = "assign-bot" | "handoff" | "resolve" | "archive" | "reopen";

/** Which statuses each action is allowed from, and where it leads (docs/chat-rest.md). */
export const THREAD_TRANSITIONS: Record<ThreadAction, { from: ThreadStatus[]; to: ThreadStatus }> =
  {
    "assign-bot": { from: ["open", "bot", "human"], to: "bot" },
    handoff: { from: ["open", "bot"], to: "human" },
    resolve: { from: ["open", "bot", "human"], to: "resolved" },
    archive: { from: ["open", "bot", "human", "resolved"], to: "archived" },
    reopen: { from: ["resolved"], to: "open" },
  };

/** Input of `create`. */
export interface NewThread {
  id?: string;
  title?: string | null;
  metadata?: Record<string, unknown>;
  /** Assigns a bot at creation: the thread starts in status `bot`. */
  botId?: string | null;
}

/** Filters of `list`. */
export interface ThreadFilter {
  status?: ThreadStatus[];
  /** A participant id or client id that must take part in the thread. */
  participant?: string;
  bot?: string;
}

/** Threads keyed `[appId, seq]`. */
export class ThreadStore {
  constructor(
    readonly rows: Collection<Thread>,
    private messages: Collection<MessageRecord>,
    private participants: Collection<Participant>,
    private reactions: Collection<Reaction>,
    private log: ThreadLog,
    private botExists: (app: App, botId: string) => boolean,
  ) {}

  /** The thread, or undefined. */
  get(app: App, id: string): Thread | undefined {
    return this.rows.get(app.id, [], id);
  }

  /** The thread or a 404 ApiError. */
  require(app: App, id: string): Thread {
    const t = this.get(app, id);
    if (!t) throw notFound("Thread", id);
    return t;
  }

  /** A fresh open thread record (not stored). */
  newRecord(app: App, input: NewThread, now = Date.now()): Thread {
    return {
      id: input.id ?? crypto.randomUUID(),
      appId: app.id,
      title: input.title ?? null,
      status: input.botId ? "bot" : "open",
      botId: input.botId ?? null,
      metadata: input.metadata ?? {},
      createdAt: now,
      updatedAt: now,
      lastMessageAt: null,
    };
  }

  /** Stores a new record without a log entry (inside a transaction; live auto-create). */
  insertRaw(app: App, thread: Thread): void {
    this.rows.insert(app.id, [], thread);
  }

  /** Overwrites a record without a log entry (inside a transaction). */
  touch(app: App, thread: Thread): void {
    this.rows.replace(app.id, [], thread);
  }

  /** Creates a thread (409 on a duplicate id, 422 unknown bot); appends `thread:created`. */
  async create(app: App, input: NewThread): Promise<Thread> {
    const id = input.id ?? crypto.randomUUID();
    const r = await this.log.append(app, id, () => {
      if (this.get(app, id)) throw conflict(`Thread ${id} already exists.`);
      if (input.botId && !this.botExists(app, input.botId)) {
        throw unprocessable(`Bot ${input.botId} does not exist.`, "/data/relationships/bot");
      }
      const thread = this.newRecord(app, { ...input, id });
      return {
        entries: [{ event: "thread:created", data: { thread } }],
        apply: () => this.insertRaw(app, thread),
        result: thread,
      };
    });
    return r.result;
  }

  /** One page of threads in creation order, filtered. */
  list(app: App, q: PageQuery, f: ThreadFilter = {}): Page<Thread> {
    const filter = (t: Thread) =>
      (!f.status || f.status.includes(t.status)) &&
      (f.bot === undefined || t.botId === f.bot) &&
      (f.participant === undefined || this.#hasParticipant(app, t.id, f.participant));
    return this.rows.page(app.id, [], q, filter);
  }

  /** Updates title/metadata and optionally reopens (status open); appends `thread:updated`. */
  async update(
    app: App,
    id: string,
    patch: { title?: string | null; metadata?: Record<string, unknown>; status?: ThreadStatus },
  ): Promise<Thread> {
    return await this.#change(app, id, (t) => {
      const next = { ...t };
      if (patch.status !== undefined && patch.status !== t.status) {
        if (patch.status !== "open") {
          throw unprocessable(
            "PATCH may only set status to open (reopen); use the action routes for other statuses.",
            "/data/attributes/status",
          );
        }
        next.status = this.#target(t, "reopen");
      }
      if (patch.title !== undefined) next.title = patch.title;
      if (patch.metadata !== undefined) next.metadata = patch.metadata;
      return next;
    });
  }

  /** Runs a status action (409 when illegal from the current status). */
  async transition(app: App, id: string, action: ThreadAction, botId?: string): Promise<Thread> {
    return await this.#change(app, id, (t) => {
      const next = { ...t, status: this.#target(t, action) };
      if (action === "assign-bot") {
        if (!botId || !this.botExists(app, botId)) {
          throw unprocessable(
            `Bot ${botId ?? "(none)"} does not exist.`,
            "/data/relationships/bot",
          );
        }
        next.botId = botId;
      }
      return next;
    });
  }

  /** Hard delete: the thread, its messages, reactions, participants and its log. */
  async delete(app: App, id: string): Promise<void> {
    this.require(app, id);
    await this.log.purge(app, id, () => {
      for (const m of this.messages.removeScope(app.id, [id])) {
        this.reactions.removeScope(app.id, [id, m.id]);
      }
      this.participants.removeScope(app.id, [id]);
      this.rows.remove(app.id, [], id);
    });
  }

  #target(t: Thread, action: ThreadAction): ThreadStatus {
    const rule = THREAD_TRANSITIONS[action];
    if (!rule.from.includes(t.status)) {
      throw conflict(`Cannot ${action} a thread in status ${t.status}.`);
    }
    return rule.to;
  }

  async #change(app: App, id: string, fn: (t: Thread) => Thread): Promise<Thread> {
    const r = await this.log.append(app, id, () => {
      const current = this.require(app, id);
      const next = { ...fn(current), updatedAt: Date.now() };
      const data: Record<string, unknown> = { thread: next };
      if (next.status !== current.status) data.previousStatus = current.status;
      return {
        entries: [{ event: "thread:updated", data }],
        apply: () => this.touch(app, next),
        result: next,
      };
    });
    return r.result;
  }

  #hasParticipant(app: App, threadId: string, who: string): boolean {
    if (this.participants.seqOf(app.id, [threadId], who) !== undefined) return true;
    return this.participants.all(app.id, [threadId], (p) => p.clientId === who).length > 0;
  }
}
