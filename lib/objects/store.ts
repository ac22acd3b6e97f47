/**
 * Durable Object service over the OrderedLog: one object = one stream, `log_id` = position.
 * The derived state (slot values and sizes) is written in the same transaction as the log
 * entry; every committed write is broadcast on the object's topic in log order.
 */
import type { Database, Key } from "lmdb";
import type { Hub } from "../hub/hub.ts";
import type { StoreEnv } from "../store/env.ts";
import { OrderedLog } from "../store/ordered_log.ts";
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

/**
 * Storage stream of an object. `/` and `%` in the type are escaped so that distinct
 * (type, key) pairs never share a stream (the key is the rest and may contain `/`).
 */
export function streamOf(ref: ObjectRef): string {
  const type = ref.type.replaceAll("%", "%25").replaceAll("/", "%2F");
  return `${ref.appId}/${type}/${ref.key}`;
}

/** The Phoenix topic of an object's channel. */
export function topicOf(ref: ObjectRef): string {
  return `durable:${ref.appKey}:${ref.type}:${ref.key}`;
}

/** The event name and payload broadcast (and replayed) for one log entry. */
export function eventOf(logId: number, entry: ObjectEntry): [string, unknown] {
  if (entry.batch) return ["batch", { log_id: logId, ops: entry.ops }];
  const [op] = entry.ops;
  return ["change", { log_id: logId, op: op.op, key: op.key, value: op.value }];
}

/** Reads and writes Durable Objects; see the module comment. */
export class ObjectStore {
  readonly log: OrderedLog;
  #records: Database<ObjectRecord, Key>;
  #hub: Hub;

  constructor(env: StoreEnv, hub: Hub) {
    this.log = new OrderedLog(env, "objects");
    this.#records = env.db<ObjectRecord>("objects:state");
    this.#hub = hub;
  }

  /** State and log_id read in one synchronous turn (one consistent LMDB snapshot). */
  snapshot(ref: ObjectRef): Snapshot {
    const stream = streamOf(ref);
    const log_id = this.log.head(stream);
    const record = this.#records.get(stream);
    return { state: record?.state ?? {}, log_id };
  }

  /** One slot's value; null when unset. */
  slot(ref: ObjectRef, slot: string): unknown {
    const state = this.#records.get(streamOf(ref))?.state;
    return state && Object.hasOwn(state, slot) ? state[slot] : null;
  }

  /**
   * Applies `ops` as one log entry (a `batch` event when `batch`, else a `change` event).
   * Rejects with `ObjectError` and writes nothing when an op does not apply.
   */
  async write(ref: ObjectRef, ops: Op[], batch: boolean): Promise<{ log_id: number; ops: MaterialOp[] }> {
    const stream = streamOf(ref);
    const topic = topicOf(ref);
    const done = await this.log.append<ObjectEntry, MaterialOp[]>(
      stream,
      () => {
        const { record, material } = applyOps(this.#records.get(stream) ?? emptyRecord(), ops);
        return {
          entries: [{ batch, ops: material }],
          apply: () => this.#records.put(stream, record),
          result: material,
        };
      },
      (position, entries) => {
        const [event, payload] = eventOf(position, entries[0]);
        this.#hub.publish(topic, event, payload);
      },
    );
    return { log_id: done.position, ops: done.result };
  }

  /** Replay items after `after`, oldest first; `limit` counts log entries. */
  items(ref: ObjectRef, after: number, limit?: number): LogItem[] {
    const out: LogItem[] = [];
    for (const rec of this.log.after<ObjectEntry>(streamOf(ref), after, limit)) {
      for (const op of rec.entry.ops) out.push({ ...op, log_id: rec.position });
    }
    return out;
  }

  /** Back to never-written; subscribers get a `purge` event `{ log_id: 0 }`. */
  async purge(ref: ObjectRef): Promise<void> {
    const stream = streamOf(ref);
    await this.log.purge(
      stream,
      () => void this.#records.remove(stream),
      () => this.#hub.publish(topicOf(ref), "purge", { log_id: 0 }),
    );
  }
}
