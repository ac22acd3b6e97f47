/**
 * Optimistic concurrency for the replicated log: a write set is computed against the state at
 * log position `base` and carries what it read. When it reaches position S, every node checks
 * the same thing: did any write set applied between `base` and S write a key it read? If so it
 * is stale and skipped (the writer runs it again); else it applies. The check depends only on
 * the log, so every node decides alike, and writers on unrelated keys never wait on each other.
 * A batch id seen again within the window (a publish retried with the same message id that
 * the stream stored twice) is skipped the same way on every node.
 */
import { compareKeys, type Key } from "lmdb";
import { keyOf } from "../wire/key.ts";

/** What a transaction read: single keys, key ranges (bounds inclusive, null = open) and whole
 * databases (a read this module cannot describe more precisely). */
export interface ReadSet {
  p: [string, Key][];
  g: [string, Key | null, Key | null][];
  a: string[];
}

/** An empty read set. */
export function emptyReads(): ReadSet {
  return { p: [], g: [], a: [] };
}

/** The keys a `getRange`/`getKeys` call can visit, as inclusive bounds (null when open). */
export function rangeBounds(
  opts: { start?: Key; end?: Key; reverse?: boolean } = {},
): [Key | null, Key | null] {
  const start = opts.start ?? null;
  const end = opts.end ?? null;
  return opts.reverse ? [end, start] : [start, end];
}

const id = (db: string, key: Key) => keyOf(db, JSON.stringify(key));

/** The keys written at each recent log position, enough to check any write set whose base is
 * at most `window` positions old (older ones count as stale). */
export class RecentWrites {
  readonly window: number;
  #entries: { seq: number; written: [string, Key][]; batch?: string }[] = [];
  /** Batch ids of the positions in the window, with how often each occurs there. */
  #batches = new Map<string, number>();

  constructor(window: number, stored: Iterable<[number, [string, Key][], string?]> = []) {
    this.window = window;
    for (const [seq, written, batch] of stored) {
      this.#entries.push({ seq, written, batch });
      if (batch !== undefined) this.#batches.set(batch, (this.#batches.get(batch) ?? 0) + 1);
    }
    this.#entries.sort((a, b) => a.seq - b.seq);
  }

  /** True when a recent position carried batch `batch` already (this occurrence is a repeat). */
  repeated(batch: string): boolean {
    return this.#batches.has(batch);
  }

  /** True when a write set read at `base` and arriving at `seq` read something written since. */
  stale(base: number, seq: number, reads: ReadSet): boolean {
    if (seq - 1 - base > this.window) return true;
    const points = new Set(reads.p.map(([db, key]) => id(db, key)));
    const whole = new Set(reads.a);
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const e = this.#entries[i];
      if (e.seq >= seq) continue;
      if (e.seq <= base) break;
      for (const [db, key] of e.written) {
        if (whole.has(db) || points.has(id(db, key))) return true;
        for (const [rdb, lo, hi] of reads.g) {
          if (
            rdb === db && (lo === null || compareKeys(key, lo) >= 0) &&
            (hi === null || compareKeys(key, hi) <= 0)
          ) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /** Records what position `seq` wrote (nothing when it was skipped) and its batch id;
   * forgets old positions. */
  record(seq: number, written: [string, Key][], batch?: string): void {
    this.#entries.push({ seq, written, batch });
    if (batch !== undefined) this.#batches.set(batch, (this.#batches.get(batch) ?? 0) + 1);
    const keepAfter = seq - this.window;
    let drop = 0;
    while (drop < this.#entries.length && this.#entries[drop].seq <= keepAfter) {
      this.#forget(this.#entries[drop++]);
    }
    if (drop > 0) this.#entries.splice(0, drop);
  }

  /** Forgets positions after `seq` (their commit failed and will be applied again). */
  rollback(seq: number): void {
    while (this.#entries.length > 0 && this.#entries[this.#entries.length - 1].seq > seq) {
      this.#forget(this.#entries.pop()!);
    }
  }

  #forget(entry: { batch?: string }): void {
    if (entry.batch === undefined) return;
    const n = (this.#batches.get(entry.batch) ?? 1) - 1;
    if (n > 0) this.#batches.set(entry.batch, n);
    else this.#batches.delete(entry.batch);
  }
}
