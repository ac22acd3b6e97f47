// `Table`: the seam's view of one named database of a store, the only one products, the
// console and the webhook outbox hold. Both stores implement it (one node: lmdb-js's database
// itself, `StoreEnv.db`; a cluster: `ReplicatedTable`, lib/cluster/replicated_env.ts), so code
// written against it does not know, by type, which store it runs on.

/**
 * A row's key, stored in lmdb-js's ordered-binary encoding (the storage format): strings sort
 * by their UTF-8 bytes, numbers numerically, arrays element by element (a shorter prefix
 * first), so `[stream, position]` keys range in position order.
 */
export type Key = Key[] | string | symbol | number | boolean | Uint8Array;

/** The bounds of a range read: from `start` (included) to `end` (excluded), both optional;
 * `reverse` walks from `start` down to `end` (so `start` is then the higher key); at most
 * `limit` rows. */
export interface Range<K extends Key = Key> {
  start?: K;
  end?: K;
  reverse?: boolean;
  limit?: number;
}

/** One row of a range read. */
export interface Entry<V, K extends Key = Key> {
  key: K;
  value: V;
}

/**
 * One named table of a store: rows of `V` under ordered keys `K`. Reads see the store as last
 * committed, plus the running transaction's own writes inside one. `put` and `remove` belong
 * inside a write transaction of the store (`Storage.transaction`, `Commits.run`), which makes
 * them durable together; outside one (a node-local table only) each is a write of its own,
 * durable once its promise resolves.
 */
export interface Table<V = unknown, K extends Key = Key> {
  /** The row's value, or undefined when there is none. */
  get(key: K): V | undefined;
  /** Whether the row exists. */
  doesExist(key: K): boolean;
  /** Rows in key order (see `Range`), read lazily as the iterable is walked. */
  getRange(range?: Range<K>): Iterable<Entry<V, K>>;
  /** Keys in key order (see `Range`), read lazily as the iterable is walked. */
  getKeys(range?: Range<K>): Iterable<K>;
  /** Writes the row. */
  put(key: K, value: V): void | Promise<boolean>;
  /** Removes the row (nothing when there is none). */
  remove(key: K): void | Promise<boolean>;
}
