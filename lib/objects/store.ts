/**
 * Durable Object service over the OrderedLog: one object = one stream, `log_id` = position.
 * The derived state (slot values and sizes) is written in the same transaction as the log
 * entry; every committed write is broadcast on the object's topic in log order.
 */
import type { Database, Key } from "lmdb";
import type { Hub } from "../hub/hub.ts";
import type { StoreEnv } from "../store/env.ts";
import type { CommitQueue } from "../store/commit_queue.ts";
import { objectAddress, ProductStream, type StreamAddress, type StreamLog } from "../streams/mod.ts";
import { applyOps, emptyRecord, type MaterialOp, type ObjectRecord, type Op } from "./ops.ts";

/** Which object: the app (id for storage, key for the topic), type and key. */
export interface ObjectRef {
  appId: string;
  appKey: string;
  type: string;
  key: string;
}

/** One log entry as stored: `batch` marks PATCH / transaction writes. */
export interface ObjectEntry {
  batch: boolean;
  ops: MaterialOp[];
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

/** The event name and payload broadcast (and replayed) for one log entry. */
export function eventOf(logId: number, entry: ObjectEntry): [string, unknown] {
  if (entry.batch) return ["batch", { log_id: logId, ops: entry.ops }];
  const [op] = entry.ops;
  return ["change", { log_id: logId, op: op.op, key: op.key, value: op.value }];
}

/** Reads and writes Durable Objects; see the module comment. */
export class ObjectStore {
  readonly streams: ProductStream<ObjectEntry>;
  #records: Database<ObjectRecord, Key>;
  /** Records are written and read through the log's commit queue (cached while hot). */
  #commits: CommitQueue;

  constructor(env: StoreEnv, hub: Hub, log: StreamLog) {
    this.streams = new ProductStream<ObjectEntry>(
      log,
      hub,
      (position, entry) => [eventOf(position, entry)],
    );
    this.streams.onRemotePurge(() => ["purge", { log_id: 0 }]);
    this.#records = env.db<ObjectRecord>("objects:state");
    this.#commits = env.commits;
  }

  /** State and log_id read in one synchronous turn (one consistent LMDB snapshot). */
  snapshot(ref: ObjectRef): Snapshot {
    const { stream } = addressOf(ref);
    const record = this.#commits.read(this.#records, stream);
    return { state: record?.state ?? {}, log_id: this.streams.log.head(stream) };
  }

  /** One slot's value; null when unset. */
  slot(ref: ObjectRef, slot: string): unknown {
    const state = this.#commits.read(this.#records, addressOf(ref).stream)?.state;
    return state && Object.hasOwn(state, slot) ? state[slot] : null;
  }

  /**
   * Applies `ops` as one log entry (a `batch` event when `batch`, else a `change` event).
   * Rejects with `ObjectError` and writes nothing when an op does not apply.
   */
  async write(ref: ObjectRef, ops: Op[], batch: boolean): Promise<{ log_id: number; ops: MaterialOp[] }> {
    const addr = addressOf(ref);
    const done = await this.streams.append<MaterialOp[]>(addr, () => {
      const current = this.#commits.read(this.#records, addr.stream) ?? emptyRecord();
      const { record, material } = applyOps(current, ops);
      return {
        entries: [{ batch, ops: material }],
        apply: () => this.#commits.write(this.#records, addr.stream, record, record.total + 256),
        result: material,
      };
    });
    return { log_id: done.position, ops: done.result };
  }

  /** Replay items after `after`, oldest first; `limit` counts log entries. */
  items(ref: ObjectRef, after: number, limit?: number): LogItem[] {
    const out: LogItem[] = [];
    for (const rec of this.streams.log.after<ObjectEntry>(addressOf(ref).stream, after, limit)) {
      for (const op of rec.entry.ops) out.push({ ...op, log_id: rec.position });
    }
    return out;
  }

  /** Back to never-written, in a new epoch; subscribers get `purge` `{ log_id: 0, epoch }`. */
  async purge(ref: ObjectRef): Promise<void> {
    const addr = addressOf(ref);
    await this.streams.purge(addr, "purge", { log_id: 0 }, () => this.#commits.write(this.#records, addr.stream, undefined));
  }
}
