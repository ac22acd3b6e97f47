/**
 * The writes of one speculative run (`replicated_env.ts`), kept in memory over an LMDB read
 * snapshot instead of inside a write transaction that is aborted afterwards: the run never
 * takes LMDB's write lock, so it never waits for lmdb-js's write thread (an apply commit) or
 * for the disk. Reads made through `OverlayReads` see the snapshot with the run's own puts and
 * removes over it, exactly as reads inside the aborted write transaction saw them: a point
 * read finds the last write of its key, a range read merges written keys with stored ones in
 * LMDB's key order (the keys' ordered-binary bytes), skipping removed ones.
 */
import type { Database, Key, RangeOptions, Transaction } from "lmdb";
import { fromBufferKey, toBufferKey } from "ordered-binary";

/** One written key: its ordered-binary bytes and the stored value's encoding (null:
 * removed). */
interface Written {
  bytes: Uint8Array;
  value: Uint8Array | null;
}

/** Range options, with lmdb-js's `values: false` (keys only; its types leave it out). */
export type RangeRead = RangeOptions & { values?: boolean };

/** The longest key lmdb-js writes (its default; a put of a longer key throws, as here). */
const MAX_KEY_BYTES = 1978;

/** The range options `OverlayReads.range` serves; any other makes a read unsupported. */
const RANGE_OPTIONS = new Set(["start", "end", "reverse", "limit", "values"]);

/** An lmdb-js database's value codec (lmdb-js sets it; its types do not declare it). */
interface Codec {
  encoder: { encode(value: unknown): Uint8Array };
  decoder: { decode(bytes: Uint8Array): unknown };
}

/** `a` against `b` as LMDB orders keys (bytes, a prefix first). */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** A key's ordered-binary bytes, as lmdb-js writes it. */
function keyBytes(key: Key): Uint8Array {
  return toBufferKey(key as Parameters<typeof toBufferKey>[0]);
}

/** A key as LMDB reads it back from its bytes. */
function readBack(bytes: Uint8Array): Key {
  return fromBufferKey(bytes as Parameters<typeof fromBufferKey>[0]) as Key;
}

/** The puts and removes of one speculative run, per database, in key order. */
export class WriteOverlay {
  #dbs = new Map<string, Written[]>();

  /** Records a put (`value`: the value's encoding) or, for null, a remove of `key` in `db`. */
  write(db: string, key: Key, value: Uint8Array | null): void {
    let list = this.#dbs.get(db);
    if (!list) this.#dbs.set(db, list = []);
    const bytes = keyBytes(key);
    const i = this.#search(list, bytes);
    if (i >= 0) list[i].value = value;
    else list.splice(-i - 1, 0, { bytes, value });
  }

  /** The last write of `key` in `db` this run made, if any. */
  find(db: string, key: Key): Written | undefined {
    const list = this.#dbs.get(db);
    if (!list) return undefined;
    const i = this.#search(list, keyBytes(key));
    return i >= 0 ? list[i] : undefined;
  }

  /** The keys written in `db` within a range's bounds (lmdb-js's: forward, `start` included
   * and `end` not; reverse, `start` included and `end` not, from `start` down), in the order
   * the range visits them. */
  within(db: string, opts: { start?: Key; end?: Key; reverse?: boolean }): Written[] {
    const list = this.#dbs.get(db);
    if (!list || list.length === 0) return [];
    const start = opts.start === undefined ? undefined : keyBytes(opts.start);
    const end = opts.end === undefined ? undefined : keyBytes(opts.end);
    const out = list.filter((w) =>
      opts.reverse
        ? (start === undefined || compareBytes(w.bytes, start) <= 0) &&
          (end === undefined || compareBytes(w.bytes, end) > 0)
        : (start === undefined || compareBytes(w.bytes, start) >= 0) &&
          (end === undefined || compareBytes(w.bytes, end) < 0)
    );
    return opts.reverse ? out.reverse() : out;
  }

  /** Index of `bytes` in `list`, or `-(insertion point) - 1`. */
  #search(list: Written[], bytes: Uint8Array): number {
    let lo = 0;
    let hi = list.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = compareBytes(list[mid].bytes, bytes);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -lo - 1;
  }
}

/**
 * Reads and writes of one database during a speculative run: its writes go to `overlay`, its
 * reads to the snapshot `txn` with the overlay over it. `supports*` tell which calls it can
 * serve exactly (the caller runs the speculation in a write transaction otherwise).
 */
export class OverlayReads {
  #name: string;
  #raw: Database;
  #overlay: WriteOverlay;
  #txn: Transaction;
  #live: () => boolean;

  /** `live` tells whether the run (and `txn`) is still going: a range iterated after it ends
   * reads the store as it is then, without the overlay, as one iterated after the aborted
   * write transaction did. */
  constructor(
    name: string,
    raw: Database,
    overlay: WriteOverlay,
    txn: Transaction,
    live: () => boolean,
  ) {
    this.#name = name;
    this.#raw = raw;
    this.#overlay = overlay;
    this.#txn = txn;
    this.#live = live;
  }

  /** Whether `range` serves these range options. */
  static supportsRange(opts: RangeRead | undefined): boolean {
    return opts === undefined || Object.keys(opts).every((k) => RANGE_OPTIONS.has(k));
  }

  /** A put of `value` (encoded now, as LMDB would: later changes to the object are not seen). */
  put(key: Key, value: unknown): void {
    if (keyBytes(key).length > MAX_KEY_BYTES) {
      throw new Error(`Key size is larger than the maximum key size (${MAX_KEY_BYTES})`);
    }
    const codec = this.#raw as unknown as Codec;
    this.#overlay.write(this.#name, key, Uint8Array.from(codec.encoder.encode(value)));
  }

  /** A remove of `key`. */
  remove(key: Key): void {
    this.#overlay.write(this.#name, key, null);
  }

  /** The value of `key` (a fresh copy, as LMDB returns). */
  get(key: Key): unknown {
    const w = this.#overlay.find(this.#name, key);
    if (w) return w.value === null ? undefined : this.#decode(w.value);
    return this.#raw.get(key, { transaction: this.#txn });
  }

  /** Whether `key` holds a value. */
  doesExist(key: Key): boolean {
    const w = this.#overlay.find(this.#name, key);
    if (w) return w.value !== null;
    // lmdb-js: an `undefined` value asks whether the key exists at all.
    const doesExist = this.#raw.doesExist as (
      key: Key,
      value: undefined,
      options: { transaction: Transaction },
    ) => boolean;
    return doesExist.call(this.#raw, key, undefined, { transaction: this.#txn });
  }

  /** A range (`{ key, value }` entries, or keys with `values: false`), stored and written
   * keys merged in the range's order, removed ones left out, at most `limit`. */
  range(opts: RangeRead = {}): Iterable<unknown> & { readonly asArray: unknown[] } {
    const written = this.#overlay.within(this.#name, opts);
    const iterable = {
      [Symbol.iterator]: () => this.#merged(opts, written),
      get asArray(): unknown[] {
        return [...iterable];
      },
    };
    return iterable;
  }

  /** `range`'s entries: `written` (the overlay's keys in the range, in its order) merged
   * into the stored ones. */
  *#merged(opts: RangeRead, written: Written[]): Generator<unknown> {
    if (!this.#live()) {
      yield* this.#raw.getRange(opts as RangeOptions);
      return;
    }
    if (written.length === 0) {
      yield* this.#raw.getRange({ ...opts, transaction: this.#txn } as RangeOptions);
      return;
    }
    const keysOnly = opts.values === false;
    const limit = opts.limit ?? Infinity;
    // Without the limit: removed keys do not count (the range is read lazily, no further
    // than the limit reached).
    const { limit: _, ...unlimited } = opts;
    const stored = this.#raw.getRange({ ...unlimited, transaction: this.#txn } as RangeOptions);
    const sign = opts.reverse ? -1 : 1;
    const entry = (w: Written) =>
      keysOnly ? readBack(w.bytes) : { key: readBack(w.bytes), value: this.#decode(w.value!) };
    let i = 0;
    let count = 0;
    for (const item of stored as Iterable<{ key: Key } | Key>) {
      const key = keysOnly ? (item as Key) : (item as { key: Key }).key;
      const bytes = keyBytes(key);
      // Written keys that come before this stored one.
      while (i < written.length && sign * compareBytes(written[i].bytes, bytes) < 0) {
        const w = written[i++];
        if (w.value === null) continue;
        if (count++ >= limit) return;
        yield entry(w);
      }
      // This stored key, or what this run wrote over it.
      let at: unknown = item;
      if (i < written.length && compareBytes(written[i].bytes, bytes) === 0) {
        const w = written[i++];
        if (w.value === null) continue;
        at = entry(w);
      }
      if (count++ >= limit) return;
      yield at;
    }
    for (; i < written.length; i++) {
      const w = written[i];
      if (w.value === null) continue;
      if (count++ >= limit) return;
      yield entry(w);
    }
  }

  #decode(bytes: Uint8Array): unknown {
    return (this.#raw as unknown as Codec).decoder.decode(bytes);
  }
}
