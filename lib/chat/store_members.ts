/** Participant and reaction service functions; every write is a thread-log entry. */
import type { App } from "../config/apps.ts";
import { conflict, notFound, unprocessable } from "./errors.ts";
import type { Collection, Page, PageQuery } from "./store_collection.ts";
import type { MessageStore } from "./store_messages.ts";
import type { ThreadStore } from "./store_threads.ts";
import type { ThreadLog } from "./thread_log.ts";
import type { Participant, ParticipantRole, Reaction } from "./types.ts";

/** Input of `participants.add`. */
export interface NewParticipant {
  id?: string;
  clientId?: string | null;
  displayName?: string | null;
  role?: ParticipantRole;
  botId?: string | null;
  metadata?: Record<string, unknown>;
}

/** Participants of threads (scope `[threadId]`). */
export class ParticipantStore {
  constructor(
    readonly rows: Collection<Participant>,
    private threads: ThreadStore,
    private log: ThreadLog,
  ) {}

  /** The participant or a 404 ApiError (404 also when the thread is missing). */
  require(app: App, threadId: string, id: string): Participant {
    this.threads.require(app, threadId);
    const p = this.rows.get(app.id, [threadId], id);
    if (!p) throw notFound("Participant", id);
    return p;
  }

  /** One page of participants in joining order. */
  list(app: App, threadId: string, q: PageQuery): Page<Participant> {
    this.threads.require(app, threadId);
    return this.rows.page(app.id, [threadId], q);
  }

  /** Every participant of a thread (for `include=participants`). */
  all(app: App, threadId: string): Participant[] {
    return this.rows.all(app.id, [threadId]);
  }

  /** Adds a participant; 409 when the id or the client id is already in the thread. */
  async add(app: App, threadId: string, input: NewParticipant): Promise<Participant> {
    const r = await this.log.append(app, threadId, () => {
      this.threads.require(app, threadId);
      const id = input.id ?? crypto.randomUUID();
      if (this.rows.get(app.id, [threadId], id)) {
        throw conflict(`Participant ${id} already exists in thread ${threadId}.`);
      }
      if (
        input.clientId &&
        this.rows.all(app.id, [threadId], (p) => p.clientId === input.clientId).length > 0
      ) {
        throw conflict(`Client ${input.clientId} already participates in thread ${threadId}.`);
      }
      const now = Date.now();
      const participant: Participant = {
        id,
        threadId,
        clientId: input.clientId ?? null,
        displayName: input.displayName ?? null,
        role: input.role ?? "member",
        botId: input.botId ?? null,
        metadata: input.metadata ?? {},
        lastReadMessageId: null,
        lastReadAt: null,
        createdAt: now,
        updatedAt: now,
      };
      return {
        entries: [{ event: "participant:added", data: { participant } }],
        apply: () => this.rows.insert(app.id, [threadId], participant),
        result: participant,
      };
    });
    return r.result;
  }

  /** Sets the read marker (422 when the message is not in the thread). */
  markRead(app: App, threadId: string, id: string, messageId: string, messages: MessageStore) {
    return this.#update(app, threadId, id, (p) => {
      if (!messages.get(app, threadId, messageId)) {
        throw unprocessable(
          `Message ${messageId} does not exist in thread ${threadId}.`,
          "/data/attributes/last_read_message_id",
        );
      }
      return { ...p, lastReadMessageId: messageId, lastReadAt: Date.now() };
    });
  }

  /** Changes the role. */
  setRole(app: App, threadId: string, id: string, role: ParticipantRole) {
    return this.#update(app, threadId, id, (p) => ({ ...p, role }));
  }

  /** Removes a participant; appends `participant:removed`. */
  async remove(app: App, threadId: string, id: string): Promise<void> {
    await this.log.append(app, threadId, () => {
      this.require(app, threadId, id);
      return {
        entries: [{ event: "participant:removed", data: { participantId: id } }],
        apply: () => this.rows.remove(app.id, [threadId], id),
        result: null,
      };
    });
  }

  async #update(
    app: App,
    threadId: string,
    id: string,
    fn: (p: Participant) => Participant,
  ): Promise<Participant> {
    const r = await this.log.append(app, threadId, () => {
      const next = { ...fn(this.require(app, threadId, id)), updatedAt: Date.now() };
      return {
        entries: [{ event: "participant:updated", data: { participant: next } }],
        apply: () => this.rows.replace(app.id, [threadId], next),
        result: next,
      };
    });
    return r.result;
  }
}

/** Reactions on messages (scope `[threadId, messageId]`). */
export class ReactionStore {
  constructor(
    readonly rows: Collection<Reaction>,
    private messages: MessageStore,
    private participants: ParticipantStore,
    private log: ThreadLog,
  ) {}

  /** One page of a message's reactions. */
  list(app: App, threadId: string, messageId: string, q: PageQuery): Page<Reaction> {
    this.messages.require(app, threadId, messageId);
    return this.rows.page(app.id, [threadId, messageId], q);
  }

  /** Adds a reaction; 409 when this participant already reacted with this emoji. */
  async add(
    app: App,
    threadId: string,
    messageId: string,
    input: { participantId: string; emoji: string },
  ): Promise<Reaction> {
    const r = await this.log.append(app, threadId, () => {
      this.messages.require(app, threadId, messageId);
      if (!this.participants.rows.get(app.id, [threadId], input.participantId)) {
        throw unprocessable(
          `Participant ${input.participantId} does not exist in thread ${threadId}.`,
          "/data/relationships/participant",
        );
      }
      const dup = this.rows.all(
        app.id,
        [threadId, messageId],
        (x) => x.participantId === input.participantId && x.emoji === input.emoji,
      );
      if (dup.length) throw conflict(`Participant already reacted with ${input.emoji}.`);
      const reaction: Reaction = {
        id: crypto.randomUUID(),
        threadId,
        messageId,
        participantId: input.participantId,
        emoji: input.emoji,
        createdAt: Date.now(),
      };
      return {
        entries: [{ event: "reaction:added", data: { reaction } }],
        apply: () => this.rows.insert(app.id, [threadId, messageId], reaction),
        result: reaction,
      };
    });
    return r.result;
  }

  /** Removes a reaction; appends `reaction:removed`. */
  async remove(app: App, threadId: string, messageId: string, id: string): Promise<void> {
    await this.log.append(app, threadId, () => {
      this.messages.require(app, threadId, messageId);
      if (!this.rows.get(app.id, [threadId, messageId], id)) throw notFound("Reaction", id);
      return {
        entries: [{ event: "reaction:removed", data: { reactionId: id, messageId } }],
        apply: () => this.rows.remove(app.id, [threadId, messageId], id),
        result: null,
      };
    });
  }
}
