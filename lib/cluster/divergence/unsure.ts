/**
 * Subscribers of another history (docs/cluster-internals.md, "Replica divergence"). A node that
 * stopped as diverged may have sent entries the majority never holds: it names those streams on
 * `sb.unsure` (per stream the positions after the last one a majority confirmed, under a report
 * id). Every node then resets resumes of them at or past the first unsure position for a window
 * (`UNSURE_MS`, told to the ordered logs as `HistoryReplaced`), and lists them in a node-local
 * database (`PENDING_DB`) until one that takes writes gives each a new epoch and records its
 * range in a replicated write that reads and sets a marker per report and stream
 * (`RENEWED_DB`): of two racing nodes, the later write runs again and finds it done. Markers older than `PRUNE_AFTER_MS` (or the window)
 * whose report nobody lists here are pruned through the log; epochs and ranges stay for good.
 */
import type { Database, Key } from "lmdb";
import type { Table } from "../../store/table.ts";
import { Packr } from "msgpackr";
import { log } from "../../log/mod.ts";
import type { UnsureRange } from "../../store/storage.ts";
import type { LogChangeFeed } from "../log_changes.ts";

/** Core NATS subject on which a node that stopped itself tells every node its report. */
export const UNSURE_SUBJECT = "sb.unsure";
/** How long every node resets resumes of the streams a stopped node named, whatever the epoch
 * (`SWITCHBOARD_CLUSTER_UNSURE_MS`); the epoch renewal makes it last. */
export const UNSURE_MS = 10 * 60_000;
/** How often the stopped node tells its report again within the window. */
const UNSURE_REPEAT_MS = 5000;
/** Node-local streams to renew: `[report, log, stream]` to its `UnsureRange`; a report naming
 * every stream is one row `[report, "", ""]`, `"all"` until listed, then when it was listed
 * (`"listed"` in an earlier version). */
export const PENDING_DB = "cluster:unsure-renew";
/** An earlier version's node-local list (`[log, stream]` to the first unsure position). */
export const LEGACY_DB = "cluster:unsure";
/** Replicated renewals done: `[report, log, stream]` to when. */
export const RENEWED_DB = "cluster:unsure-renewed";
/** Streams renewed, and markers pruned, per replicated write, at most; the share of the largest
 * NATS message a renewal's rows may take. */
const RENEW_BATCH = 500;
const PRUNE_BATCH = 500;
const RENEW_PAYLOAD_SHARE = 1 / 8;
/** How old a renewal's marker must be, at least, before it is pruned. */
export const PRUNE_AFTER_MS = 24 * 3600_000;

/** Per ordered log (by name), streams and their unsure positions. */
export type StreamRanges = Map<string, Map<string, UnsureRange>>;

/** What the module needs of its replicated store and link. */
export interface UnsureHost {
  readonly nodeId: string;
  /** A database as stored, outside the replicated write path. */
  rawDb<V>(name: string): Database<V, Key>;
  /** A table as a replicated transaction records it. */
  db<V>(name: string): Table<V>;
  transaction<T>(fn: () => T): Promise<T>;
  readonly changes: LogChangeFeed;
  publish(subject: string, data: Uint8Array): void;
  readonly maxPayload: number;
  /** Whether the node takes writes now. */
  writable(): boolean;
  closed(): boolean;
}

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** One row of `PENDING_DB` (a number: when a report naming every stream was listed). */
type Pending = UnsureRange | "all" | "listed" | number;
type Row = [string, string, string];

/** A new report id (random: unique across a node's reports and restarts on a new disk). */
export function newReport(nodeId: string): string {
  const bytes = [...crypto.getRandomValues(new Uint8Array(6))];
  return `${nodeId}:${bytes.map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** `a` widened to cover `b` (a `null` end is no end). */
function widen(a: unknown, b: UnsureRange): UnsureRange {
  if (!Array.isArray(a)) return b;
  return [Math.min(a[0], b[0]), a[1] === null || b[1] === null ? null : Math.max(a[1], b[1])];
}

/** Adds `range` of `stream` in log `name` to `to`. */
function add(to: StreamRanges, name: string, stream: string, range: UnsureRange): void {
  let list = to.get(name);
  if (!list) to.set(name, list = new Map());
  list.set(stream, widen(list.get(stream), range));
}

/** See the module comment. */
export class UnsureStreams {
  #host: UnsureHost;
  #windowMs: number;
  #pruneAfterMs: number;
  /** This node's own report while it is told: its streams (merged with an earlier report still
   * in its window), and until when. */
  #told: { report: string; streams: StreamRanges | "all"; until: number } | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewing = false;
  /** `renew` was called while it ran: it looks at the list once more. */
  #again = false;
  #pruneTimer: ReturnType<typeof setInterval> | undefined;
  #pruning = false;

  /** `pruneAfterMs`: `PRUNE_AFTER_MS` or the window, whichever is longer, unless given. */
  constructor(
    host: UnsureHost,
    windowMs: number,
    pruneAfterMs = Math.max(windowMs, PRUNE_AFTER_MS),
  ) {
    this.#host = host;
    this.#windowMs = windowMs;
    this.#pruneAfterMs = pruneAfterMs;
  }

  #pending(): Database<Pending, Key> {
    return this.#host.rawDb<Pending>(PENDING_DB);
  }

  /** Moves the rows of an earlier version's list (`LEGACY_DB`) into `PENDING_DB`. */
  adoptLegacy(): void {
    const legacy = this.#host.rawDb<number>(LEGACY_DB);
    const pending = this.#pending();
    legacy.transactionSync(() => {
      for (const { key, value } of legacy.getRange()) {
        const [name, stream] = key as [string, string];
        if (typeof name === "string" && typeof stream === "string" && typeof value === "number") {
          pending.put([`legacy:${this.#host.nodeId}`, name, stream], [value, null]);
        }
        legacy.remove(key);
      }
    });
  }

  /**
   * This node stopped itself: `written` are the streams it wrote after the last position a
   * majority confirmed (`"all"`: its store no longer tells). Every node is told, now and every
   * `UNSURE_REPEAT_MS` within the window; returns the streams to list for the renewal (`keep`).
   */
  stopped(report: string, from: number, written: StreamRanges | "all"): StreamRanges {
    const named = written === "all" ? this.#everyStream() : written;
    let streams: StreamRanges | "all" = written === "all"
      ? "all"
      : new Map([...written].map(([n, l]) => [n, new Map(l)]));
    const known = this.#told;
    if (known && known.until > Date.now() && streams !== "all") {
      if (known.streams === "all") streams = "all";
      else {
        for (const [name, list] of known.streams) {
          for (const [stream, range] of list) add(streams, name, stream, range);
        }
      }
    }
    const until = Date.now() + this.#windowMs;
    this.#told = { report, streams, until };
    log.warn("cluster streams whose subscribers may hold another history", {
      from,
      streams: streams === "all" ? "all" : [...streams.values()].reduce((n, m) => n + m.size, 0),
    });
    this.#host.changes.historyReplaced(streams, until);
    const tell = () => {
      try {
        this.#tell();
      } catch (err) {
        log.warn("cluster could not tell the streams that may hold another history", {
          error: String(err),
        });
      }
    };
    tell();
    clearInterval(this.#timer);
    this.#timer = setInterval(tell, UNSURE_REPEAT_MS);
    return named;
  }

  /** Lists `streams` of `report` for the renewal (inside a local transaction), widening. */
  keep(report: string, streams: StreamRanges): void {
    const pending = this.#pending();
    for (const [name, list] of streams) {
      for (const [stream, range] of list) {
        const key = [report, name, stream];
        pending.put(key, widen(pending.get(key), range));
      }
    }
  }

  /** Another node's report (`#tell`): told to the ordered logs for the window, and its streams
   * not yet renewed listed here, renewed at once when this node takes writes. */
  heard(data: Uint8Array): void {
    let report: string | undefined;
    let streams: StreamRanges | "all";
    try {
      const { n, r, ttl, all, s } = codec.unpack(data) as {
        n: string;
        r?: string;
        ttl: number;
        all?: 1;
        s?: unknown[];
      };
      if (n === this.#host.nodeId || !(ttl > 0)) return;
      report = typeof r === "string" && r.length > 0 ? r : undefined;
      if (all === 1) streams = "all";
      else {
        streams = new Map();
        for (const row of s ?? []) {
          if (!Array.isArray(row)) continue;
          // `to` is absent in reports of an earlier version: no known end.
          const [name, stream, at, to] = row as unknown[];
          if (typeof name !== "string" || typeof stream !== "string" || typeof at !== "number") {
            continue;
          }
          add(streams, name, stream, [at, typeof to === "number" && to >= at ? to : null]);
        }
      }
      this.#host.changes.historyReplaced(streams, Date.now() + Math.min(ttl, this.#windowMs));
    } catch {
      return; // not such a message
    }
    // A report of an earlier version has no id: its node renews its streams itself.
    if (report === undefined || this.#host.closed()) return;
    void this.#remember(report, streams).then((added) => void (added && this.renew()), (err) => {
      log.warn("cluster could not list the streams that may hold another history", {
        error: String(err),
      });
    });
  }

  /** Lists the streams of another node's report neither renewed nor listed yet; whether any. */
  async #remember(report: string, streams: StreamRanges | "all"): Promise<boolean> {
    const pending = this.#pending();
    const renewed = this.#host.rawDb<number>(RENEWED_DB);
    if (streams === "all") {
      if (pending.get([report, "", ""]) !== undefined) return false;
      await pending.put([report, "", ""], "all");
      return true;
    }
    const fresh: [Key, UnsureRange][] = [];
    for (const [name, list] of streams) {
      for (const [stream, range] of list) {
        const key = [report, name, stream];
        if (renewed.get(key) !== undefined) continue;
        const known = pending.get(key);
        const wide = widen(known, range);
        if (!Array.isArray(known) || known[0] !== wide[0] || known[1] !== wide[1]) {
          fresh.push([key, wide]);
        }
      }
    }
    if (fresh.length === 0) return false;
    await pending.transaction(() => {
      for (const [key, range] of fresh) pending.put(key, range);
    });
    return true;
  }

  /**
   * Gives every stream listed a new epoch and records its range, in replicated writes of at most
   * `RENEW_BATCH` streams, each once per report, each removing its rows from the list in the same
   * commit (a crash renews the rest on restart; at worst one more snapshot for a client). Runs
   * while this node takes writes; a failed write is retried every second.
   */
  async renew(): Promise<void> {
    if (this.#renewing) {
      this.#again = true;
      return;
    }
    this.#renewing = true;
    let renewed = 0;
    let listed = 0;
    try {
      do {
        this.#again = false;
        while (this.#host.writable()) {
          try {
            await this.#listAll();
            const batch = this.#batch();
            if (batch.length === 0) break;
            renewed += await this.#host.transaction(() => this.#renewIn(batch));
            listed += batch.length;
          } catch (err) {
            log.warn(
              "cluster could not renew the epochs of the streams that may hold another history; retrying",
              { error: String(err) },
            );
            await new Promise((r) => setTimeout(r, 1000));
          }
        }
      } while (this.#again && this.#host.writable());
    } finally {
      this.#renewing = false;
    }
    if (renewed > 0) {
      log.info(
        "cluster renewed the epochs of the streams whose subscribers may hold another history",
        { streams: renewed },
      );
    } else if (listed > 0) {
      log.info(
        "cluster found the epochs of the streams whose subscribers may hold another history renewed already",
        { streams: listed },
      );
    }
    this.#pruneTimer ??= setInterval(
      () => void this.prune(),
      Math.max(1000, Math.min(this.#pruneAfterMs, 3600_000)),
    );
  }

  /**
   * Removes the markers older than `pruneAfterMs` whose report this node does not list, through
   * replicated writes of at most `PRUNE_BATCH` (while it takes writes), and this node's rows of
   * reports naming every stream listed that long ago; how many markers it removed.
   */
  async prune(): Promise<number> {
    if (this.#pruning || this.#host.closed()) return 0;
    this.#pruning = true;
    let removed = 0;
    try {
      const old = Date.now() - this.#pruneAfterMs;
      const pending = this.#pending();
      const listed = new Set<string>();
      const stale: Key[] = [];
      const dated: Key[] = [];
      for (const { key, value } of pending.getRange()) {
        const row = key as Row;
        if (row[1] === "" && row[2] === "" && typeof value === "number" && value < old) {
          stale.push(key);
        } else {
          listed.add(row[0]);
          // An earlier version's mark has no time: it is pruned that long from now.
          if (value === "listed") dated.push(key);
        }
      }
      if (stale.length > 0 || dated.length > 0) {
        await pending.transaction(() => {
          for (const key of stale) pending.remove(key);
          for (const key of dated) pending.put(key, Date.now());
        });
      }
      while (this.#host.writable()) {
        const batch: Key[] = [];
        for (const { key, value } of this.#host.rawDb<number>(RENEWED_DB).getRange()) {
          if (typeof value === "number" && value < old && !listed.has((key as Row)[0])) {
            batch.push(key);
          }
          if (batch.length >= PRUNE_BATCH) break;
        }
        if (batch.length === 0) break;
        const done = await this.#host.transaction(() => {
          const markers = this.#host.db<number>(RENEWED_DB);
          let n = 0;
          for (const key of batch) {
            const when = markers.get(key);
            if (typeof when === "number" && when < old) {
              markers.remove(key);
              n++;
            }
          }
          return n;
        });
        removed += done;
        if (done === 0) break;
      }
    } catch (err) {
      log.warn("cluster could not prune the markers of renewed epochs; trying again later", {
        error: String(err),
      });
    } finally {
      this.#pruning = false;
    }
    if (removed > 0) {
      log.info("cluster pruned the markers of old epoch renewals", { markers: removed });
    }
    return removed;
  }

  /** Stops telling and pruning (the store closes). */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    clearInterval(this.#pruneTimer);
    this.#pruneTimer = undefined;
  }

  /** Replaces each report naming every stream by a row per stream this node's store holds. */
  async #listAll(): Promise<void> {
    const pending = this.#pending();
    const reports: string[] = [];
    for (const { key, value } of pending.getRange()) {
      if (value === "all") reports.push((key as Row)[0]);
    }
    if (reports.length === 0) return;
    const every = this.#everyStream();
    const renewed = this.#host.rawDb<number>(RENEWED_DB);
    await pending.transaction(() => {
      for (const report of reports) {
        for (const [name, list] of every) {
          for (const [stream, range] of list) {
            if (renewed.get([report, name, stream]) === undefined) {
              pending.put([report, name, stream], range);
            }
          }
        }
        pending.put([report, "", ""], Date.now());
      }
    });
  }

  /** The next rows to renew, at most `RENEW_BATCH` and `RENEW_PAYLOAD_SHARE` of a message. */
  #batch(): [Row, UnsureRange][] {
    const out: [Row, UnsureRange][] = [];
    const limit = this.#host.maxPayload * RENEW_PAYLOAD_SHARE;
    let bytes = 0;
    for (const { key, value } of this.#pending().getRange()) {
      if (!Array.isArray(value)) continue;
      const row = key as Row;
      out.push([row, value]);
      // Its key read and written twice (marker, list), its stream written thrice (epoch, range).
      bytes += (row[0].length + row[1].length + row[2].length) * 3 + row[2].length * 3 + 64;
      if (out.length >= RENEW_BATCH || bytes >= limit) break;
    }
    return out;
  }

  /** Inside a replicated transaction: renews the rows of `batch` not renewed yet, marks them,
   * and removes every row of it from the list; how many it renewed. */
  #renewIn(batch: [Row, UnsureRange][]): number {
    const pending = this.#host.db<Pending>(PENDING_DB);
    const done = this.#host.db<number>(RENEWED_DB);
    const ranges: StreamRanges = new Map();
    let count = 0;
    for (const [key, range] of batch) {
      pending.remove(key);
      if (done.get(key) !== undefined) continue;
      done.put(key, Date.now());
      add(ranges, key[1], key[2], range);
      count++;
    }
    if (count > 0) this.#host.changes.historyReplaced(ranges);
    return count;
  }

  /** Every stream of this node's store, each unsure from position 1 with no known end. */
  #everyStream(): StreamRanges {
    const every = this.#host.changes.everyStream((db) => this.#host.rawDb(db).getKeys());
    return new Map(
      [...every].map((
        [name, list],
      ) => [name, new Map([...list.keys()].map((s) => [s, [1, null] as UnsureRange]))]),
    );
  }

  /** Tells the other nodes this node's report (messages within the payload limit) until its
   * window ends. */
  #tell(): void {
    const told = this.#told;
    const ttl = told ? told.until - Date.now() : 0;
    if (!told || ttl <= 0 || this.#host.closed()) return this.close();
    const n = this.#host.nodeId;
    const r = told.report;
    if (told.streams === "all") {
      return this.#host.publish(UNSURE_SUBJECT, codec.pack({ n, r, ttl, all: 1 }));
    }
    const limit = Math.max(1024, this.#host.maxPayload / 2);
    let part: [string, string, number, number | null][] = [];
    let bytes = 0;
    const send = () => {
      if (part.length > 0) this.#host.publish(UNSURE_SUBJECT, codec.pack({ n, r, ttl, s: part }));
      part = [];
      bytes = 0;
    };
    for (const [name, streams] of told.streams) {
      for (const [stream, [from, to]] of streams) {
        part.push([name, stream, from, to]);
        bytes += name.length + stream.length * 3 + 32;
        if (bytes >= limit) send();
      }
    }
    send();
  }
}
