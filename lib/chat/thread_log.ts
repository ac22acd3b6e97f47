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
 * A hard thread delete purges the stream (a new epoch starts) and then broadcasts
 * `thread:deleted` `{ threadId, epoch }` (no `log_id`: the log no longer exists).
 *
 * The live side (lib/chat/live) appends its own events (runs, tokens, ...) through the same
 * `append`, so positions stay contiguous per thread across REST and live writes.
 */
import type { App } from "../config/apps.ts";
import type { Hub } from "../hub/hub.ts";
import {
  LOG_ID,
  type LogRecord,
  type Prepared,
  ProductStream,
  type StreamAddress,
  type StreamLog,
  threadAddress,
} from "../streams/mod.ts";
import type { ThreadEntry } from "./types.ts";
import { wireEventData } from "./wire.ts";
import { errorFields, log } from "../log/mod.ts";

/** Called after each entry has been broadcast (webhooks hook in here). */
export type ThreadLogListener = (
  app: App,
  threadId: string,
  logId: number,
  entry: ThreadEntry,
) => void;

/**
 * What another part of chat keeps per thread and must drop on a hard delete: `apply` runs inside
 * the purge transaction (durable records), `after` once it committed (memory). `apply` may
 * return a value handed to `after`.
 */
export interface ThreadPurgeHook {
  apply?(app: App, threadId: string): unknown;
  after?(app: App, threadId: string, applied: unknown): void;
}

/**
 * Computes, inside an append's transaction, what else must be written with these entries (the
 * webhook outbox); returns the writes, or undefined for none. Must not throw for valid entries.
 */
export type ThreadStageHook = (
  app: App,
  threadId: string,
  firstLogId: number,
  entries: ThreadEntry[],
) => (() => void) | undefined;

/** The thread log: ordered, durable, broadcast-after-commit (a face of the stream layer). */
export class ThreadLog {
  readonly streams: ProductStream<ThreadEntry>;
  #listeners = new Set<ThreadLogListener>();
  #purgeHooks: ThreadPurgeHook[] = [];
  #stageHooks: ThreadStageHook[] = [];

  /** Binds the thread log `log` to `hub`. */
  constructor(log: StreamLog, hub: Hub) {
    this.streams = new ProductStream<ThreadEntry>(
      log,
      hub,
      LOG_ID,
      (logId, entry) => [[entry.event, { log_id: logId, ...wireEventData(entry.data) }]],
    );
    // Topic `chat:{appKey}:{threadId}`: the thread id is the topic's name.
    this.streams.purgeNotice((topic) => ["thread:deleted", { threadId: topic.name }]);
  }

  /** Storage stream and topic of a thread. */
  address(app: App, threadId: string): StreamAddress {
    return threadAddress(app, threadId);
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
    const staged = (head: number): Prepared<ThreadEntry, R> => {
      const p = prepare(head);
      const writes = this.#stageHooks.map((h) => h(app, threadId, head + 1, p.entries))
        .filter((w): w is () => void => w !== undefined);
      if (writes.length === 0) return p;
      return {
        ...p,
        apply: (first) => {
          p.apply?.(first);
          for (const w of writes) w();
        },
      };
    };
    return this.streams.append(this.address(app, threadId), staged, (first, entries) => {
      // Listeners run after every broadcast of the batch; they must not throw or block.
      for (const fn of this.#listeners) {
        entries.forEach((entry, i) => {
          try {
            fn(app, threadId, first + i, entry);
          } catch (err) {
            log.error("chat thread-log listener failed", errorFields(err));
          }
        });
      }
    });
  }

  /** Entries after `position`, oldest first, at most `limit`. */
  after(app: App, threadId: string, position: number, limit?: number): LogRecord<ThreadEntry>[] {
    return this.streams.log.after<ThreadEntry>(this.address(app, threadId).stream, position, limit);
  }

  /** Entries before `position`, newest first, at most `limit`. */
  before(app: App, threadId: string, position: number, limit: number): LogRecord<ThreadEntry>[] {
    return this.streams.log.before<ThreadEntry>(
      this.address(app, threadId).stream,
      position,
      limit,
    );
  }

  /** The thread's current `log_id` (0 when never written). */
  head(app: App, threadId: string): number {
    return this.streams.log.head(this.address(app, threadId).stream);
  }

  /**
   * Deletes the thread's log (hard delete) with `apply` writes in the same transaction and
   * starts a new epoch, then broadcasts `thread:deleted` `{ threadId, epoch }`.
   */
  async purge(app: App, threadId: string, apply?: () => void): Promise<void> {
    let applied: unknown[] = [];
    await this.streams.purge(this.address(app, threadId), () => {
      apply?.();
      applied = this.#purgeHooks.map((h) => h.apply?.(app, threadId));
    });
    this.#purgeHooks.forEach((h, i) => h.after?.(app, threadId, applied[i]));
  }

  /** Registers writes staged with every append (see `ThreadStageHook`). */
  onStage(hook: ThreadStageHook): void {
    this.#stageHooks.push(hook);
  }

  /** Registers state to drop with a thread on hard delete (see `ThreadPurgeHook`). */
  onPurge(hook: ThreadPurgeHook): void {
    this.#purgeHooks.push(hook);
  }

  /** Registers a listener called for every entry after its broadcast; returns an unsubscribe. */
  onEntry(fn: ThreadLogListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
