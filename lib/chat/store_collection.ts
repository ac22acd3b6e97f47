/**
 * Generic ordered record collections for chat, over two LMDB databases:
 * - `chat:rows` key `[kind, appId, ...scope, seq]` -> record, so listing is creation order;
 * - `chat:ids`  key `[kind, appId, ...scope, id]`  -> seq, for lookups by id; it also holds
 *   the global sequence counter (`["#seq"]`) and uniqueness keys of other kinds.
 * Write methods must run inside `env.transaction` (or an OrderedLog `apply`).
 */
import type { Key, Table } from "../store/table.ts";
import type { Storage } from "../store/storage.ts";
import { ApiError } from "../http/errors.ts";

const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** Cursor pagination request: `after`/`before` are record ids (opaque to clients). */
export interface PageQuery {
  after?: string;
  before?: string;
  size: number;
}

/** One page of records in creation order, with whether more exist on either side. */
export interface Page<T> {
  items: T[];
  hasNext: boolean;
  hasPrev: boolean;
}

/** The two shared databases. */
export interface CollectionDbs {
  rows: Table<unknown>;
  ids: Table<unknown>;
}

/** Opens the shared chat databases once. */
export function openCollectionDbs(env: Storage): CollectionDbs {
  return { rows: env.db("chat:rows"), ids: env.db("chat:ids") };
}

/** Allocates the next global sequence number (inside a write transaction). */
export function nextSeq(dbs: CollectionDbs): number {
  const seq = ((dbs.ids.get(["#seq"]) as number | undefined) ?? 0) + 1;
  dbs.ids.put(["#seq"], seq);
  return seq;
}

/** Records of one kind, scoped by app and a fixed-length scope path (e.g. `[threadId]`). */
export class Collection<T extends { id: string }> {
  constructor(private dbs: CollectionDbs, readonly kind: string) {}

  /** Internal sequence of record `id`, undefined when absent. */
  seqOf(appId: string, scope: string[], id: string): number | undefined {
    return this.dbs.ids.get([this.kind, appId, ...scope, id]) as number | undefined;
  }

  /** The record, or undefined. */
  get(appId: string, scope: string[], id: string): T | undefined {
    const seq = this.seqOf(appId, scope, id);
    return seq === undefined
      ? undefined
      : this.dbs.rows.get([this.kind, appId, ...scope, seq]) as T | undefined;
  }

  /** Stores a new record (caller checked the id is free). */
  insert(appId: string, scope: string[], record: T): void {
    const seq = nextSeq(this.dbs);
    this.dbs.ids.put([this.kind, appId, ...scope, record.id], seq);
    this.dbs.rows.put([this.kind, appId, ...scope, seq], record);
  }

  /** Overwrites an existing record in place (same position in the listing). */
  replace(appId: string, scope: string[], record: T): void {
    const seq = this.seqOf(appId, scope, record.id);
    if (seq === undefined) throw new Error(`chat ${this.kind} ${record.id} does not exist.`);
    this.dbs.rows.put([this.kind, appId, ...scope, seq], record);
  }

  /** Removes a record; no-op when absent. */
  remove(appId: string, scope: string[], id: string): void {
    const seq = this.seqOf(appId, scope, id);
    if (seq === undefined) return;
    this.dbs.ids.remove([this.kind, appId, ...scope, id]);
    this.dbs.rows.remove([this.kind, appId, ...scope, seq]);
  }

  /** Every record in scope, in creation order. */
  all(appId: string, scope: string[], filter?: (r: T) => boolean): T[] {
    const out: T[] = [];
    for (const { value } of this.#range(appId, scope, 0, MAX_SEQ, false)) {
      if (!filter || filter(value)) out.push(value);
    }
    return out;
  }

  /** The newest `limit` records in creation order, and whether older ones exist. */
  newest(appId: string, scope: string[], limit: number): { items: T[]; older: boolean } {
    const out = this.#collect(appId, scope, 0, MAX_SEQ, true, limit + 1, () => true);
    return { items: out.slice(0, limit).reverse(), older: out.length > limit };
  }

  /** Removes every record in scope; returns them. */
  removeScope(appId: string, scope: string[]): T[] {
    const removed = this.all(appId, scope);
    for (const r of removed) this.remove(appId, scope, r.id);
    return removed;
  }

  /**
   * One page in creation order. `after`/`before` are ids of records in this scope (400 when
   * unknown); `filter` is applied while scanning.
   */
  page(appId: string, scope: string[], q: PageQuery, filter?: (r: T) => boolean): Page<T> {
    const match = filter ?? (() => true);
    const cursorSeq = (id: string, param: string) => {
      const seq = this.seqOf(appId, scope, id);
      if (seq === undefined) {
        throw new ApiError(400, `No ${this.kind} with id ${id}.`, {
          title: "Invalid cursor",
          source: { parameter: param },
        });
      }
      return seq;
    };
    if (q.before !== undefined && q.after === undefined) {
      const from = cursorSeq(q.before, "page[before]");
      const found = this.#collect(appId, scope, 0, from, true, q.size + 1, match);
      const hasPrev = found.length > q.size;
      const items = found.slice(0, q.size).reverse();
      return { items, hasPrev, hasNext: this.#exists(appId, scope, from - 1, false, match) };
    }
    const from = q.after !== undefined ? cursorSeq(q.after, "page[after]") : 0;
    const until = q.before !== undefined ? cursorSeq(q.before, "page[before]") : MAX_SEQ;
    const found = this.#collect(appId, scope, from + 1, until, false, q.size + 1, match);
    const items = found.slice(0, q.size);
    const hasNext = found.length > q.size;
    const hasPrev = from > 0 && this.#exists(appId, scope, from + 1, true, match);
    return { items, hasNext, hasPrev };
  }

  #range(appId: string, scope: string[], lo: number, hi: number, reverse: boolean) {
    const base = [this.kind, appId, ...scope];
    const range = reverse
      ? this.dbs.rows.getRange({ start: [...base, hi - 1], end: [...base, lo], reverse: true })
      : this.dbs.rows.getRange({ start: [...base, lo], end: [...base, hi] });
    return range as Iterable<{ key: Key; value: T }>;
  }

  #collect(
    appId: string,
    scope: string[],
    lo: number,
    hi: number,
    reverse: boolean,
    limit: number,
    match: (r: T) => boolean,
  ): T[] {
    const out: T[] = [];
    for (const { value } of this.#range(appId, scope, lo, hi, reverse)) {
      if (!match(value)) continue;
      out.push(value);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Whether a matching record exists before `pivot` (exclusive) or after it (inclusive). */
  #exists(
    appId: string,
    scope: string[],
    pivot: number,
    before: boolean,
    match: (r: T) => boolean,
  ): boolean {
    const found = before
      ? this.#collect(appId, scope, 0, pivot, true, 1, match)
      : this.#collect(appId, scope, pivot + 1, MAX_SEQ, false, 1, match);
    return found.length > 0;
  }
}
