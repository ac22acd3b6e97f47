/**
 * The chat store: one object per service (threads, messages, participants, reactions, bots)
 * over two shared LMDB databases (store_collection.ts) and the thread log. Used by BOTH the
 * REST routes and the live thread channel.
 *
 * Convenience pass-throughs for the live side: `createMessage`, `getMessage`, `listMessages`,
 * `editMessage`, `updateMessage`, `softDeleteMessage`, `hardDeleteMessage`, `getThread`.
 * Inside your own `threadLog.append` prepare, use `messages.stageCreate(...)` to create a
 * message together with other entries in one transaction.
 */
import type { App } from "../config/apps.ts";
import type { Storage } from "../store/storage.ts";
import { BotStore } from "./store_bots.ts";
import { Collection, openCollectionDbs, type PageQuery } from "./store_collection.ts";
import { ParticipantStore, ReactionStore } from "./store_members.ts";
import {
  type CreateMessageOptions,
  type MessagePatch,
  MessageStore,
  type NewMessage,
} from "./store_messages.ts";
import { ThreadStore } from "./store_threads.ts";
import type { ThreadLog } from "./thread_log.ts";
import type { Bot, MessageRecord, Participant, Reaction, Thread } from "./types.ts";

export type { CreateMessageOptions, MessagePatch, NewMessage } from "./store_messages.ts";
export type { Page, PageQuery } from "./store_collection.ts";

/** All chat record services. */
export class ChatStore {
  readonly threads: ThreadStore;
  readonly messages: MessageStore;
  readonly participants: ParticipantStore;
  readonly reactions: ReactionStore;
  readonly bots: BotStore;

  /** Opens the collections in `env`; thread writes go through `log`. */
  constructor(env: Storage, log: ThreadLog) {
    const dbs = openCollectionDbs(env);
    const threadRows = new Collection<Thread>(dbs, "thread");
    const messageRows = new Collection<MessageRecord>(dbs, "message");
    const participantRows = new Collection<Participant>(dbs, "participant");
    const reactionRows = new Collection<Reaction>(dbs, "reaction");
    this.bots = new BotStore(new Collection<Bot>(dbs, "bot"), env);
    this.threads = new ThreadStore(
      threadRows,
      messageRows,
      participantRows,
      reactionRows,
      log,
      (app, id) => this.bots.get(app, id) !== undefined,
    );
    this.messages = new MessageStore(messageRows, reactionRows, this.threads, log);
    this.participants = new ParticipantStore(participantRows, this.threads, log);
    this.reactions = new ReactionStore(reactionRows, this.messages, this.participants, log);
  }

  /** The thread, or undefined. */
  getThread(app: App, threadId: string): Thread | undefined {
    return this.threads.get(app, threadId);
  }

  /** Creates a message; rejects with ApiError 409 on a duplicate id (see MessageStore). */
  createMessage(app: App, threadId: string, input: NewMessage, opts?: CreateMessageOptions) {
    return this.messages.create(app, threadId, input, opts);
  }

  /** The message, or undefined. */
  getMessage(app: App, threadId: string, id: string): MessageRecord | undefined {
    return this.messages.get(app, threadId, id);
  }

  /** One page of messages in creation order (`parentId` filters replies). */
  listMessages(app: App, threadId: string, q: PageQuery & { parentId?: string }) {
    return this.messages.list(app, threadId, q);
  }

  /** Replaces content, sets editedAt; appends `message:updated`. */
  editMessage(app: App, threadId: string, id: string, content: unknown) {
    return this.messages.edit(app, threadId, id, content);
  }

  /** Generic patch (status, runId, ...); appends `message:updated`. */
  updateMessage(app: App, threadId: string, id: string, patch: MessagePatch) {
    return this.messages.update(app, threadId, id, patch);
  }

  /** Soft delete; appends `message:deleted` with hard false. */
  softDeleteMessage(app: App, threadId: string, id: string) {
    return this.messages.softDelete(app, threadId, id);
  }

  /** Hard delete; appends `message:deleted` with hard true. */
  hardDeleteMessage(app: App, threadId: string, id: string) {
    return this.messages.hardDelete(app, threadId, id);
  }
}
