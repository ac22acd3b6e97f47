// `OrderedLog`, the LMDB implementation of the stream layer's `StreamLog`: per stream an
// append-only log with contiguous positions, heads, retention trims, purges with epochs, and
// publishing in position order after commit.
import type { Table } from "./table.ts";
import type {
  Appended,
  LogFollower,
  LogRecord,
  Prepared,
  PublishFn,
  StreamLog,
} from "../streams/stream_log.ts";
import type { Commits, HistoryReplaced, Storage, StreamChange } from "./storage.ts";
import { logDbNames, type StoredEntry, unpackEntry as unpack } from "./log_layout.ts";

export type { LogRecord, Prepared, PublishFn } from "../streams/stream_log.ts";

/** A stream's head row: its latest and oldest retained positions. Stored by a stream's first
 * append, a trim and a purge only; in between the head is derived from the last entry. */
interface StreamMeta {
  head: number;
  first: number;
}

interface Tracker {
  published: number;
  inflight: number;
  ready: Map<number, () => number>;
  waiters: { position: number; fn: () => void; dropped?: () => void }[];
  purging?: Promise<void>;
}

const MAX_POS = Number.MAX_SAFE_INTEGER;

/** A fresh epoch id: 8 random hex digits. */
function newEpoch(): string {
  return [...crypto.getRandomValues(new Uint8Array(4))].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * The ordered log primitive every product stands on: per stream an append-only log with
 * contiguous positions from 1, stored in LMDB.
 *
 * Contract:
 * - `append` allocates positions inside one write transaction together with any derived
 *   state (`apply`), and resolves only after that transaction is durable. Appends go through
 *   the store's `CommitQueue`: concurrent appends share one commit, and a stream's head is
 *   kept in memory between them. An append stores its entries and no head row (but for a
 *   stream's first); the head is derived from the last stored entry, so one write touches one
 *   place in the B-tree per stream.
 * - `publish` callbacks run after durability, strictly in position order per stream, so a
 *   subscriber never sees a write a crash could lose and never sees writes out of order.
 * - All or nothing: `prepare` runs inside the transaction and may read; if `prepare` or
 *   `apply` throws (or LMDB refuses a write, e.g. a key over its size limit), nothing of that
 *   append is written, `append` rejects with the error, and concurrent appends committed in
 *   the same LMDB batch are unaffected.
 */
export class OrderedLog implements StreamLog {
  #commits: Commits;
  #log: Table<StoredEntry>;
  #meta: Table<StreamMeta>;
  #epochs: Table<string>;
  #trackers = new Map<string, Tracker>();
  #followers: LogFollower[] = [];
  #staged: boolean;
  /** Clustered mode only (see `HistoryReplaced`): the ranges recorded for good
   * (`LogDbNames.replaced`); for a while, per stream its first position and until when, and
   * until when every stream. */
  #replaced: Table<number | null> | undefined;
  #window = new Map<string, { from: number; until: number }>();
  #windowAll = 0;

  /**
   * The log named `name` in `env`. `staged`: every `prepare` and `apply` of this log's
   * products writes only through the store's `Commits` (never to a database itself), so an
   * append needs no child transaction and its entries are put at the end of the batch.
   */
  constructor(env: Storage, name = "log", { staged = false } = {}) {
    this.#staged = staged;
    this.#commits = env.commits;
    const names = logDbNames(name);
    this.#log = env.db(names.entries);
    this.#meta = env.db(names.meta);
    this.#epochs = env.db(names.epochs);
    if (env.remote) this.#replaced = env.db(names.replaced);
    env.remote?.follow(name, {
      applying: (changes) => this.#remoteApplying(changes),
      applied: (changes, ok) => this.#remoteApplied(changes, ok),
      replaced: () => this.#storeReplaced(),
      historyReplaced: (change) => this.#historyReplaced(change),
    });
  }

  /** Registers `fn` for entries and purges other nodes made (see `StreamLog.follow`). */
  follow(fn: LogFollower): void {
    this.#followers.push(fn);
  }

  /** The stream's current epoch: `"0"` until its first purge, then a new random id per purge. */
  epoch(stream: string): string {
    return this.#epochs.get(stream) ?? "0";
  }

  /** Position of the latest entry, 0 for a never-written stream. */
  head(stream: string): number {
    return this.#readMeta(stream)?.head ?? 0;
  }

  /** Oldest retained position (head + 1 when every entry was trimmed or none exists). */
  first(stream: string): number {
    return this.#readMeta(stream)?.first ?? 1;
  }

  /** The stream's head and first position, cached or derived from the store. */
  #readMeta(stream: string): StreamMeta | undefined {
    return this.#commits.read(this.#meta, stream, () => this.#loadMeta(stream));
  }

  /** The head row as stored, its head moved up to the last stored entry's position. */
  #loadMeta(stream: string): StreamMeta | undefined {
    const row = this.#meta.get(stream);
    let last = 0;
    for (
      const key of this.#log.getKeys({
        start: [stream, MAX_POS],
        end: [stream, 0],
        reverse: true,
        limit: 1,
      })
    ) {
      last = (key as [string, number])[1];
    }
    if (!row && last === 0) return undefined;
    return { head: Math.max(row?.head ?? 0, last), first: row?.first ?? 1 };
  }

  /** Entries with position greater than `position`, oldest first, at most `limit`. */
  after<E = unknown>(stream: string, position: number, limit = Infinity): LogRecord<E>[] {
    const out: LogRecord<E>[] = [];
    const range = this.#log.getRange({
      start: [stream, Math.max(0, position) + 1],
      end: [stream, MAX_POS],
      ...(Number.isFinite(limit) ? { limit } : {}),
    });
    for (const { key, value } of range) {
      const { time, entry } = unpack(value);
      out.push({ position: (key as [string, number])[1], time, entry: entry as E });
    }
    return out;
  }

  /** Entries with position lower than `before`, newest first, at most `limit`. */
  before<E = unknown>(stream: string, before: number, limit: number): LogRecord<E>[] {
    const out: LogRecord<E>[] = [];
    const range = this.#log.getRange({
      start: [stream, before - 1],
      end: [stream, 0],
      reverse: true,
      limit,
    });
    for (const { key, value } of range) {
      const { time, entry } = unpack(value);
      out.push({ position: (key as [string, number])[1], time, entry: entry as E });
    }
    return out;
  }

  /** Appends entries; see the class contract. Resolves with the first position and result
   * (or what `settle` makes of them, see `StreamLog.append`). A promise chain rather than an
   * async function: every durable write passes here. */
  append<E, R, T = Appended<R>>(
    stream: string,
    prepare: (head: number) => Prepared<E, R>,
    publish?: PublishFn<E, R>,
    settle?: (position: number, count: number, result: R) => T,
  ): Promise<T> {
    // A purge of the stream goes first (then look again: another may have started).
    const purging = this.#trackers.get(stream)?.purging;
    if (purging) return purging.then(() => this.append(stream, prepare, publish, settle));
    const tracker = this.#track(stream);
    tracker.inflight++;
    let prepared: Prepared<E, R> | undefined;
    let first = 0;
    const failed = (err: unknown): never => {
      tracker.inflight--;
      this.#release(stream, tracker);
      throw err;
    };
    return this.#commits.run(() => {
      const meta = this.#readMeta(stream) ?? { head: 0, first: 1 };
      prepared = prepare(meta.head);
      first = meta.head + 1;
      const now = Date.now();
      const entries = prepared.entries;
      for (let i = 0; i < entries.length; i++) {
        this.#commits.put(this.#log, [stream, first + i], [now, entries[i]]);
      }
      const head = meta.head + prepared.entries.length;
      if (head > meta.head) {
        // Only a stream's first append stores its head row; later heads are derived.
        if (meta.head === 0) this.#commits.write(this.#meta, stream, { head, first: 1 });
        else this.#commits.keep(this.#meta, stream, { head, first: meta.first });
      }
      prepared.apply?.(first);
    }, this.#staged).then(
      () => this.#appended(stream, tracker, prepared!, first, publish, settle),
      failed,
    );
  }

  /** An append's commit is durable: publish in position order and resolve. */
  #appended<E, R, T>(
    stream: string,
    tracker: Tracker,
    p: Prepared<E, R>,
    first: number,
    publish?: PublishFn<E, R>,
    settle?: (position: number, count: number, result: R) => T,
  ): T {
    const count = p.entries.length;
    if (count === 0) {
      tracker.inflight--;
      this.#release(stream, tracker);
      return settle
        ? settle(first - 1, count, p.result)
        : { position: first - 1, count, result: p.result } as T;
    }
    if (tracker.published === first - 1) {
      // Next in order (the usual case): published at once, without a turn through `ready`.
      publish?.(first, p.entries, p.result);
      tracker.published = first + count - 1;
      if (tracker.waiters.length) this.#wake(tracker);
      if (tracker.ready.size) this.#drain(tracker);
    } else {
      tracker.ready.set(first, () => {
        publish?.(first, p.entries, p.result);
        return first + count - 1;
      });
      this.#drain(tracker);
    }
    tracker.inflight--;
    this.#release(stream, tracker);
    return settle
      ? settle(first, count, p.result)
      : { position: first, count, result: p.result } as T;
  }

  /**
   * Runs `fn` synchronously once every entry up to `position` has been published (at once
   * when that is already so). Used by joins: read a snapshot at N, then subscribe in the same
   * turn that N is published, so live delivery starts exactly at N + 1.
   */
  whenPublished(stream: string, position: number, fn: () => void, dropped?: () => void): void {
    const tracker = this.#trackers.get(stream);
    if (!tracker || tracker.published >= position) return fn();
    tracker.waiters.push({ position, fn, dropped });
  }

  /** See `StreamLog.replacedAt` (told by the store: `HistoryReplaced`); on one node, false. */
  replacedAt(stream: string, position: number, epoch?: string): boolean {
    if (!this.#replaced || !(position >= 1)) return false;
    const now = Date.now();
    const mark = this.#window.get(stream);
    if (this.#windowAll > now || (mark && mark.until > now && position >= mark.from)) return true;
    if (epoch !== undefined) return false;
    const ranges = this.#replaced.getRange({ start: [stream, 0], end: [stream, position + 1] });
    for (const { value } of ranges) if (value === null || value >= position) return true;
    return false;
  }

  /** For a while: noted in memory. For good: new epochs and the ranges written in the running
   * transaction, a range already recorded from the same position widened. */
  #historyReplaced(change: HistoryReplaced): void {
    if (change.until === undefined) {
      for (const [stream, [from, to]] of change.streams) {
        this.#epochs.put(stream, newEpoch());
        const known = this.#replaced!.get([stream, from]);
        const end = to === null || known === null ? null : Math.max(to, known ?? to);
        this.#replaced!.put([stream, from], end);
      }
      return;
    }
    const { streams, until } = change;
    const now = Date.now();
    for (const [s, m] of this.#window) if (m.until <= now) this.#window.delete(s);
    if (streams === "all") this.#windowAll = Math.max(this.#windowAll, until);
    else {
      for (const [stream, [from]] of streams) {
        const mark = this.#window.get(stream);
        this.#window.set(stream, {
          from: Math.min(from, mark?.from ?? from),
          until: Math.max(until, mark?.until ?? until),
        });
      }
    }
  }

  /**
   * The store was replaced under this log (a clustered node rebuilt it): what each stream's
   * tracker knew of the old store is void. Joins waiting for a position of the old store are
   * dropped (their sockets are being closed), appends of the old store waiting for their turn
   * are never published, and each stream counts as published up to its head in the new store,
   * so the entries applied from now on are published in order from there. The trackers stay
   * the same objects: appends still under way settle on them.
   */
  #storeReplaced(): void {
    for (const [stream, t] of this.#trackers) {
      const dropped = t.waiters.splice(0);
      t.ready.clear();
      t.published = this.head(stream);
      for (const w of dropped) w.dropped?.();
      this.#release(stream, t);
    }
  }

  /**
   * Deletes every entry and the head: the stream is back to "never written", in a new epoch
   * (resolved, and handed to `publish`, which runs after the commit).
   */
  async purge(
    stream: string,
    apply?: () => void,
    publish?: (epoch: string) => void,
  ): Promise<string> {
    const tracker = this.#track(stream);
    let done!: () => void;
    const prior = tracker.purging;
    tracker.purging = new Promise((r) => (done = r));
    try {
      if (prior) await prior;
      while (tracker.inflight > 0 || tracker.ready.size > 0) {
        await new Promise((r) => setTimeout(r, 1));
      }
      const epoch = newEpoch();
      await this.#commits.run(() => {
        for (const key of this.#log.getKeys({ start: [stream, 0], end: [stream, MAX_POS] })) {
          this.#log.remove(key);
        }
        this.#commits.write(this.#meta, stream, undefined);
        this.#epochs.put(stream, epoch);
        apply?.();
      });
      tracker.published = 0;
      publish?.(epoch);
      return epoch;
    } finally {
      tracker.purging = undefined;
      done();
      this.#release(stream, tracker);
    }
  }

  /**
   * Drops old entries so at most `maxCount` remain and none older than `maxAgeMs`.
   * Resolves with the number removed. The head never moves.
   */
  async trim(stream: string, opts: { maxCount?: number; maxAgeMs?: number }): Promise<number> {
    return await this.#commits.run(() => {
      const meta = this.#readMeta(stream);
      if (!meta) return 0;
      let keepFrom = meta.first;
      if (opts.maxCount !== undefined) keepFrom = Math.max(keepFrom, meta.head - opts.maxCount + 1);
      if (opts.maxAgeMs !== undefined) {
        const cutoff = Date.now() - opts.maxAgeMs;
        for (
          const { key, value } of this.#log.getRange({
            start: [stream, keepFrom],
            end: [stream, meta.head + 1],
          })
        ) {
          if (unpack(value).time >= cutoff) break;
          keepFrom = (key as [string, number])[1] + 1;
        }
      }
      if (keepFrom <= meta.first) return 0;
      for (
        const key of this.#log.getKeys({ start: [stream, meta.first], end: [stream, keepFrom] })
      ) {
        this.#log.remove(key);
      }
      this.#commits.write(this.#meta, stream, { head: meta.head, first: keepFrom });
      return keepFrom - meta.first;
    });
  }

  /** Streams with a stored head, in key order, optionally only those starting with `prefix`. */
  streams(prefix = ""): string[] {
    const out: string[] = [];
    for (const key of this.#meta.getKeys({ start: prefix })) {
      const s = key as string;
      if (!s.startsWith(prefix)) break;
      out.push(s);
    }
    return out;
  }

  /** Another node's changes are about to be committed here: hold joins on their streams
   * until they are published. */
  #remoteApplying(changes: StreamChange[]): void {
    for (const { stream } of changes) this.#track(stream).inflight++;
  }

  /** Another node's changes are committed here: publish its entries in position order (after
   * any earlier ones of this node's own appends), or its purge. */
  #remoteApplied(changes: StreamChange[], committed: boolean): void {
    for (const { stream, appended, purged } of changes) {
      const t = this.#trackers.get(stream);
      if (!t) continue;
      if (committed && purged !== undefined) {
        t.published = 0;
        t.ready.clear();
        for (const f of this.#followers) f.purged(stream, purged);
      }
      if (committed && appended.length > 0) {
        const first = appended[0].position;
        const last = appended[appended.length - 1].position;
        t.ready.set(first, () => {
          for (const f of this.#followers) f.appended(stream, first, appended.map((r) => r.entry));
          return last;
        });
        this.#drain(t);
      }
      t.inflight--;
      this.#release(stream, t);
    }
  }

  #track(stream: string): Tracker {
    let t = this.#trackers.get(stream);
    if (!t) {
      // No in-flight append exists for this stream, so the committed head is fully published.
      t = { published: this.head(stream), inflight: 0, ready: new Map(), waiters: [] };
      this.#trackers.set(stream, t);
    }
    return t;
  }

  #drain(t: Tracker): void {
    let next = t.ready.get(t.published + 1);
    while (next) {
      t.ready.delete(t.published + 1);
      t.published = next();
      if (t.waiters.length) this.#wake(t);
      next = t.ready.get(t.published + 1);
    }
  }

  /** Runs the waiters whose position is now published. */
  #wake(t: Tracker): void {
    const due = t.waiters.filter((w) => w.position <= t.published);
    t.waiters = t.waiters.filter((w) => w.position > t.published);
    for (const w of due) w.fn();
  }

  #release(stream: string, t: Tracker): void {
    if (
      this.#trackers.get(stream) === t && t.inflight === 0 && t.ready.size === 0 &&
      t.waiters.length === 0 && !t.purging
    ) {
      this.#trackers.delete(stream);
    }
  }
}
