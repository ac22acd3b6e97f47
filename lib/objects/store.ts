/**
 * Durable Object service over the OrderedLog: one object = one stream, `log_id` = position.
 * The log is the truth and the state (slot values and sizes) is derived from it: kept in memory
 * while the object is hot, and stored as a checkpoint (the state at a position) every
 * `CHECKPOINT_EVERY` entries, in the transaction of the entry it reflects (an object with
 * fewer entries has none: the empty state at position 0 is its checkpoint). A read the cache
 * cannot answer folds the entries after the checkpoint into it. Every committed write is
 * broadcast on the object's topic in log order.
 */
import type { Table } from "../store/table.ts";
import type { Hub } from "../hub/hub.ts";
import type { Commits, Storage } from "../store/storage.ts";
import {
  LOG_ID,
  objectAddress,
  ProductStream,
  type StreamAddress,
  type StreamLog,
} from "../streams/mod.ts";
import {
  applyOps,
  emptyRecord,
  foldOps,
  type MaterialOp,
  type ObjectRecord,
  type Op,
} from "./ops.ts";
import { packEntry, type StoredObjectEntry, unpackEntry } from "./entry.ts";

/**
 * Entries between stored checkpoints of an object's state: a read that misses the cache folds
 * at most this many. The fold needs every entry after the checkpoint, so object logs are never
 * trimmed (only purged whole, which removes the checkpoint too).
 */
export const CHECKPOINT_EVERY = 32;

/** An object's state at log position `at`; `saved` is where its newest stored checkpoint is
 * (0 when none is stored yet; undefined for a record an earlier release stored, which has no
 * `at`, so the next write stores a checkpoint). */
interface Held extends ObjectRecord {
  at: number;
  saved?: number;
}

/** Which object: the app (id for storage, key for the topic), type and key. */
export interface ObjectRef {
  appId: string;
  appKey: string;
  type: string;
  key: string;
}

/** A replay item (`GET /log`): one per materialised op; a batch shares its log_id. */
export interface LogItem extends MaterialOp {
  log_id: number;
}

/** The state snapshot of an object. */
export interface Snapshot {
  state: Record<string, unknown>;
  log_id: number;
}

/** Storage stream and topic of an object (naming lives in the stream layer). */
export function addressOf(ref: ObjectRef): StreamAddress {
  return objectAddress({ id: ref.appId, key: ref.appKey }, ref.type, ref.key);
}

/** The event name and payload broadcast (and replayed) for one stored log entry. A flat entry
 * of one op (most writes) maps straight to its `change` payload, with no `ObjectEntry` built
 * on the way: replay is one such mapping per entry. */
export function eventOf(logId: number, stored: StoredObjectEntry): [string, unknown] {
  if (Array.isArray(stored) && stored[0] === 0 && stored.length === 4) {
    return ["change", { log_id: logId, op: stored[1], key: stored[2], value: stored[3] }];
  }
  const entry = unpackEntry(stored);
  if (entry.batch) return ["batch", { log_id: logId, ops: entry.ops }];
  const [op] = entry.ops;
  return ["change", { log_id: logId, op: op.op, key: op.key, value: op.value }];
}

/** What a write resolves with: its log position and materialised ops. */
export interface WriteDone {
  log_id: number;
  ops: MaterialOp[];
}

/** The default reply of `ObjectStore.write`: the write itself. */
const itself = (done: WriteDone): WriteDone => done;

/** Reads and writes Durable Objects; see the module comment. */
export class ObjectStore {
  readonly streams: ProductStream<StoredObjectEntry>;
  #records: Table<Held>;
  /** Records are written and read through the log's commit queue (cached while hot). */
  #commits: Commits;

  constructor(env: Storage, hub: Hub, log: StreamLog) {
    this.streams = new ProductStream<StoredObjectEntry>(
      log,
      hub,
      LOG_ID,
      (position, entry) => [eventOf(position, entry)],
    );
    this.streams.purgeNotice(() => ["purge", { log_id: 0 }]);
    this.#records = env.db<Held>("objects:state");
    this.#commits = env.commits;
  }

  /** State and log_id read in one synchronous turn (one consistent LMDB snapshot). */
  snapshot(ref: ObjectRef): Snapshot {
    const { stream } = addressOf(ref);
    const head = this.streams.log.head(stream);
    return { state: this.#held(stream, head)?.state ?? {}, log_id: head };
  }

  /** One slot's value; null when unset. */
  slot(ref: ObjectRef, slot: string): unknown {
    const state = this.#held(addressOf(ref).stream)?.state;
    return state && Object.hasOwn(state, slot) ? state[slot] : null;
  }

  /** The object's state at the log's `head` (read from the log when not given): staged or
   * cached, or its checkpoint with the entries after it folded in. */
  #held(stream: string, head = this.streams.log.head(stream)): Held | undefined {
    return this.#commits.read(
      this.#records,
      stream,
      () => this.#load(stream),
      (held) => held.at === head,
    );
  }

  /** The stored checkpoint brought up to the last stored entry. */
  #load(stream: string): Held | undefined {
    const row = this.#records.get(stream);
    // A record stored by an earlier release was rewritten with every entry: it is at the head.
    let held: Held = row
      ? { ...row, at: row.at ?? this.streams.log.head(stream), saved: row.at }
      : { ...emptyRecord(), at: 0, saved: 0 };
    for (const rec of this.streams.log.after<StoredObjectEntry>(stream, held.at)) {
      held = { ...foldOps(held, unpackEntry(rec.entry).ops), at: rec.position, saved: held.saved };
    }
    return row || held.at > 0 ? held : undefined;
  }

  /**
   * Applies `ops` as one log entry (a `batch` event when `batch`, else a `change` event).
   * Rejects with `ApiError` and writes nothing when an op does not apply. Resolves with
   * `reply` of the durable write (the write itself by default): the HTTP routes build their
   * response there, in the one promise reaction every write needs anyway.
   */
  write<T = WriteDone>(
    ref: ObjectRef,
    ops: Op[],
    batch: boolean,
    reply: (done: WriteDone) => T = itself as (done: WriteDone) => T,
  ): Promise<T> {
    const addr = addressOf(ref);
    return this.streams.append<MaterialOp[], T>(
      addr,
      (head) => {
        const current = this.#held(addr.stream, head);
        const { record, material } = applyOps(current ?? emptyRecord(), ops);
        return {
          entries: [packEntry(batch, material)],
          apply: (at) => {
            const saved = current ? current.saved : 0;
            const checkpoint = saved === undefined || at - saved >= CHECKPOINT_EVERY;
            // `record` is applyOps' own copy: it becomes the held state as it is (no third copy).
            const held = record as Held;
            held.at = at;
            held.saved = checkpoint ? at : saved;
            const weight = record.total + 256;
            if (checkpoint) this.#commits.write(this.#records, addr.stream, held, weight);
            else this.#commits.keep(this.#records, addr.stream, held, weight);
          },
          result: material,
        };
      },
      undefined,
      (position, _count, material) => reply({ log_id: position, ops: material }),
    );
  }

  /** Replay items after `after`, oldest first; `limit` counts log entries. */
  items(ref: ObjectRef, after: number, limit?: number): LogItem[] {
    const out: LogItem[] = [];
    for (
      const rec of this.streams.log.after<StoredObjectEntry>(addressOf(ref).stream, after, limit)
    ) {
      for (const op of unpackEntry(rec.entry).ops) out.push({ ...op, log_id: rec.position });
    }
    return out;
  }

  /** Back to never-written, in a new epoch; subscribers get `purge` `{ log_id: 0, epoch }`. */
  async purge(ref: ObjectRef): Promise<void> {
    const addr = addressOf(ref);
    await this.streams.purge(
      addr,
      () => this.#commits.write(this.#records, addr.stream, undefined),
    );
  }
}
