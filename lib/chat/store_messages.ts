/**
 * Message service functions (used by REST and the live channel). Every write goes through the
 * thread log so it is durable, ordered and broadcast (see thread_log.ts for the events).
 */
import type { App } from "../config/apps.ts";
import { conflict, notFound, unprocessable } from "./errors.ts";
import { Collection, type Page, type PageQuery } from "./store_collection.ts";
import type { ThreadLog } from "./thread_log.ts";
import type { ThreadStore } from "./store_threads.ts";
import type { MessageRecord, MessageRole, MessageStatus, Reaction, ThreadEntry } from "./types.ts";

/** Input of `createMessage`; `id` is the caller-chosen message id (the live `messageId`). */
export interface NewMessage {
  id: string;
  role: MessageRole;
  content: unknown;
  runId?: string | null;
  ownerClientId?: string | null;
  parentId?: string | null;
  forkOf?: string | null;
  msgRegenerate?: string | null;
  status?: MessageStatus;
  authorParticipantId?: string | null;
  botId?: string | null;
  /** Defaults to now. */
  createdAt?: number;
}

/** Options of `createMessage`. */
export interface CreateMessageOptions {
  /** Create the thread (status open) when it does not exist instead of answering 404. */
  autoCreateThread?: boolean;
  /** Further entries appended right after `message:created`, in the same transaction. */
  extraEntries?: ThreadEntry[];
  /** Ids staged earlier in the same append: valid parents although not stored yet. */
  stagedParents?: string[];
}

/** Fields `updateMessage` may change. */
export type MessagePatch = Partial<
  Pick<MessageRecord, "content" | "status" | "runId" | "editedAt" | "deletedAt" | "ownerClientId">
>;

/** Messages of threads, keyed `[appId, threadId, seq]` (creation order). */
export class MessageStore {
  /** Raw collection (scope `[threadId]`). */
  readonly rows: Collection<MessageRecord>;
  /** Reactions live here too so a hard delete can drop them in the same transaction. */
  readonly reactions: Collection<Reaction>;

  constructor(
    rows: Collection<MessageRecord>,
    reactions: Collection<Reaction>,
    private threads: ThreadStore,
    private log: ThreadLog,
  ) {
    this.rows = rows;
    this.reactions = reactions;
  }

  /** The message, or undefined. */
  get(app: App, threadId: string, id: string): MessageRecord | undefined {
    return this.rows.get(app.id, [threadId], id);
  }

  /** The message or a 404 ApiError (also 404 when the thread is missing). */
  require(app: App, threadId: string, id: string): MessageRecord {
    this.threads.require(app, threadId);
    const m = this.get(app, threadId, id);
    if (!m) throw notFound("Message", id);
    return m;
  }

  /** One page of a thread's messages in creation order; `parentId` filters to replies. */
  list(
    app: App,
    threadId: string,
    q: PageQuery & { parentId?: string },
  ): Page<MessageRecord> {
    this.threads.require(app, threadId);
    const filter = q.parentId !== undefined
      ? (m: MessageRecord) => m.parentId === q.parentId
      : undefined;
    return this.rows.page(app.id, [threadId], q, filter);
  }

  /**
   * Validates a new message and returns the record plus the writes, for use INSIDE a
   * thread-log `prepare` (the live side composes it with its own entries). Throws ApiError:
   * 404 thread missing (unless autoCreateThread), 409 duplicate id or archived thread, 422 bad
   * parent.
   */
  stageCreate(
    app: App,
    threadId: string,
    input: NewMessage,
    opts: CreateMessageOptions = {},
  ): { record: MessageRecord; entry: ThreadEntry; apply: () => void } {
    if (typeof input.id !== "string" || input.id === "") {
      throw unprocessable("id must be a non-empty string.", "/data/id");
    }
    const thread = opts.autoCreateThread
      ? this.threads.get(app, threadId)
      : this.threads.require(app, threadId);
    if (thread?.status === "archived") throw conflict(`Thread ${threadId} is archived.`);
    if (this.get(app, threadId, input.id)) {
      throw conflict(`Message ${input.id} already exists in thread ${threadId}.`);
    }
    if (
      input.parentId && !opts.stagedParents?.includes(input.parentId) &&
      !this.get(app, threadId, input.parentId)
    ) {
      throw unprocessable(
        `Parent message ${input.parentId} does not exist.`,
        "/data/relationships/parent",
      );
    }
    const now = Date.now();
    const createdAt = input.createdAt ?? now;
    const record: MessageRecord = {
      id: input.id,
      threadId,
      runId: input.runId ?? null,
      ownerClientId: input.ownerClientId ?? null,
      role: input.role,
      content: input.content ?? null,
      parentId: input.parentId ?? null,
      forkOf: input.forkOf ?? null,
      msgRegenerate: input.msgRegenerate ?? null,
      status: input.status ?? "complete",
      createdAt,
      updatedAt: createdAt,
      editedAt: null,
      deletedAt: null,
      authorParticipantId: input.authorParticipantId ?? null,
      botId: input.botId ?? null,
    };
    const apply = () => {
      if (thread) this.threads.touch(app, { ...thread, lastMessageAt: createdAt, updatedAt: now });
      else this.threads.insertRaw(app, this.threads.newRecord(app, { id: threadId }, now));
      this.rows.insert(app.id, [threadId], record);
    };
    return { record, entry: { event: "message:created", data: { message: record } }, apply };
  }

  /** Creates a message (409 on a duplicate id) and appends `message:created`. */
  async create(
    app: App,
    threadId: string,
    input: NewMessage,
    opts: CreateMessageOptions = {},
  ): Promise<{ message: MessageRecord; logId: number }> {
    const r = await this.log.append(app, threadId, () => {
      const staged = this.stageCreate(app, threadId, input, opts);
      return {
        entries: [staged.entry, ...(opts.extraEntries ?? [])],
        apply: staged.apply,
        result: staged.record,
      };
    });
    return { message: r.result, logId: r.position };
  }

  /** The newest `limit` messages of a thread in creation order, and whether older ones exist. */
  recent(
    app: App,
    threadId: string,
    limit: number,
  ): { messages: MessageRecord[]; hasOlder: boolean } {
    const { items, older } = this.rows.newest(app.id, [threadId], limit);
    return { messages: items, hasOlder: older };
  }

  /**
   * Overwrites a stored message inside the caller's thread-log transaction (the live side's
   * run end writes the final text this way, with its own entries).
   */
  stageReplace(app: App, threadId: string, record: MessageRecord): () => void {
    return () => this.rows.replace(app.id, [threadId], record);
  }

  /** Applies `patch` (sets updatedAt) and appends `message:updated`. 404 when missing. */
  async update(
    app: App,
    threadId: string,
    id: string,
    patch: MessagePatch | ((m: MessageRecord) => MessagePatch),
    event: (m: MessageRecord) => ThreadEntry = (m) => ({
      event: "message:updated",
      data: { message: m },
    }),
  ): Promise<{ message: MessageRecord; logId: number }> {
    const r = await this.log.append(app, threadId, () => {
      const current = this.require(app, threadId, id);
      const changes = typeof patch === "function" ? patch(current) : patch;
      const next: MessageRecord = { ...current, ...changes, updatedAt: Date.now() };
      return {
        entries: [event(next)],
        apply: () => this.rows.replace(app.id, [threadId], next),
        result: next,
      };
    });
    return { message: r.result, logId: r.position };
  }

  /** Replaces the content and sets editedAt. 409 when the message is soft-deleted. */
  edit(app: App, threadId: string, id: string, content: unknown) {
    return this.update(app, threadId, id, (m) => {
      if (m.deletedAt !== null) throw conflict(`Message ${id} is deleted.`);
      return { content, editedAt: Date.now() };
    });
  }

  /** Soft delete: content removed, deletedAt set; appends `message:deleted` (hard: false). */
  softDelete(app: App, threadId: string, id: string) {
    return this.update(
      app,
      threadId,
      id,
      (m) => {
        if (m.deletedAt !== null) throw conflict(`Message ${id} is already deleted.`);
        return { content: null, deletedAt: Date.now() };
      },
      (m) => ({ event: "message:deleted", data: { messageId: m.id, hard: false, message: m } }),
    );
  }

  /** Hard delete: the record and its reactions are removed; appends `message:deleted`. */
  async hardDelete(app: App, threadId: string, id: string): Promise<{ logId: number }> {
    const r = await this.log.append(app, threadId, () => {
      this.require(app, threadId, id);
      return {
        entries: [{ event: "message:deleted", data: { messageId: id, hard: true } }],
        apply: () => {
          this.reactions.removeScope(app.id, [threadId, id]);
          this.rows.remove(app.id, [threadId], id);
        },
        result: null,
      };
    });
    return { logId: r.position };
  }
}
