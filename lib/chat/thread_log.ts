/**
 * The per-thread ordered log: one `OrderedLog(env, "chat")`, stream `{appId}/{threadId}`, Phoenix
 * topic `chat:{appKey}:{threadId}`. Each entry gets its own position (`log_id`) and is broadcast,
 * after it is durable, as event = `entry.event`, payload = `{ log_id, ...entry.data }`.
 *
 * Events appended by the REST/store side (payload shown without `log_id`; records are the
 * types in ./types.ts, camelCase, times in unix ms):
 *
 * | event               | data                                                                 |
 * |---------------------|----------------------------------------------------------------------|
 * | thread:created      | `{ thread: Thread }` (REST POST /threads; usually log_id 1)          |
 * | thread:updated      | `{ thread: Thread, previousStatus?: ThreadStatus }` (previousStatus   |
 * |                     | only when the status changed: assign-bot, handoff, resolve, archive,  |
 * |                     | reopen)                                                              |
 * | message:created     | `{ message: MessageRecord }`                                         |
 * | message:updated     | `{ message: MessageRecord }` (edit, or any store.updateMessage)       |
 * | message:deleted     | `{ messageId, hard: boolean, message?: MessageRecord }` (soft delete  |
 * |                     | carries the tombstone record: content null, deletedAt set)           |
 * | reaction:added      | `{ reaction: Reaction }`                                             |
 * | reaction:removed    | `{ reactionId, messageId }`                                          |
 * | participant:added   | `{ participant: Participant }`                                       |
 * | participant:updated | `{ participant: Participant }` (mark-read, role change)              |
 * | participant:removed | `{ participantId }`                                                  |
 *
 * A hard thread delete purges the stream and then broadcasts `thread:deleted` `{ threadId }`
 * (no `log_id`: the log no longer exists).
 *
 * The live side (lib/chat/live) appends its own events (runs, tokens, ...) through the same
 * `append`, so positions stay contiguous per thread across REST and live writes.
 */
import type { App } from "../config/apps.ts";
import type { Hub } from "../hub/hub.ts";
import { type LogRecord, OrderedLog, type Prepared } from "../store/ordered_log.ts";
import type { StoreEnv } from "../store/env.ts";
import type { ThreadEntry } from "./types.ts";

/** Called after each entry has been broadcast (webhooks hook in here). */
export type ThreadLogListener = (
  app: App,
  threadId: string,
  logId: number,
  entry: ThreadEntry,
) => void;

/** The thread log: ordered, durable, broadcast-after-commit. */
export class ThreadLog {
  readonly log: OrderedLog;
  #hub: Hub;
  #listeners = new Set<ThreadLogListener>();

  /** Opens the `chat` ordered log in `env`; broadcasts go through `hub`. */
  constructor(env: StoreEnv, hub: Hub) {
    this.log = new OrderedLog(env, "chat");
    this.#hub = hub;
  }

  /** The ordered-log stream of a thread. */
  stream(app: App, threadId: string): string {
    return `${app.id}/${threadId}`;
  }

  /** The Phoenix topic of a thread. */
  topic(app: App, threadId: string): string {
    return `chat:${app.key}:${threadId}`;
  }

  /**
   * Appends the entries `prepare(head)` returns (one position each) together with its `apply`
   * writes in one durable transaction, then broadcasts each entry in order. If `prepare`
   * throws, nothing is written and this rejects with that error.
   */
  append<R>(
    app: App,
    threadId: string,
    prepare: (head: number) => Prepared<ThreadEntry, R>,
  ): Promise<{ position: number; count: number; result: R }> {
    const topic = this.topic(app, threadId);
    return this.log.append(this.stream(app, threadId), prepare, (first, entries) => {
      entries.forEach((entry, i) => {
        this.#hub.publish(topic, entry.event, { log_id: first + i, ...entry.data });
      });
      // Listeners run after every broadcast of the batch; they must not throw or block.
      for (const fn of this.#listeners) {
        entries.forEach((entry, i) => {
          try {
            fn(app, threadId, first + i, entry);
          } catch (err) {
            console.error("chat thread-log listener failed:", err);
          }
        });
      }
    });
  }

  /** Entries after `position`, oldest first, at most `limit`. */
  after(app: App, threadId: string, position: number, limit?: number): LogRecord<ThreadEntry>[] {
    return this.log.after<ThreadEntry>(this.stream(app, threadId), position, limit);
  }

  /** Entries before `position`, newest first, at most `limit`. */
  before(app: App, threadId: string, position: number, limit: number): LogRecord<ThreadEntry>[] {
    return this.log.before<ThreadEntry>(this.stream(app, threadId), position, limit);
  }

  /** The thread's current `log_id` (0 when never written). */
  head(app: App, threadId: string): number {
    return this.log.head(this.stream(app, threadId));
  }

  /** Oldest retained position. */
  first(app: App, threadId: string): number {
    return this.log.first(this.stream(app, threadId));
  }

  /** Runs `fn` synchronously once every entry up to `position` is published (join pattern). */
  whenPublished(app: App, threadId: string, position: number, fn: () => void): void {
    this.log.whenPublished(this.stream(app, threadId), position, fn);
  }

  /**
   * Deletes the thread's log (hard delete) with `apply` writes in the same transaction, then
   * broadcasts `thread:deleted` `{ threadId }`.
   */
  purge(app: App, threadId: string, apply?: () => void): Promise<void> {
    return this.log.purge(this.stream(app, threadId), apply, () => {
      this.#hub.publish(this.topic(app, threadId), "thread:deleted", { threadId });
    });
  }

  /** Registers a listener called for every entry after its broadcast; returns an unsubscribe. */
  onEntry(fn: ThreadLogListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
