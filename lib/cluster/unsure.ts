/**
 * Subscribers of another history (docs/cluster-internals.md, "Replica divergence"). A node that
 * stopped itself as diverged may have sent its subscribers entries the majority never holds; it
 * names those streams to every node on `sb.unsure` (per stream the positions from the first it
 * wrote after the last one a majority confirmed up to its head, under a report id), and this module
 * owns what follows from such a report on every node:
 * - the window (`UNSURE_MS`) in which every node resets a resume of those streams at or past
 *   the first unsure position, whatever its epoch (told to the ordered logs:
 *   `HistoryReplaced`);
 * - the epoch renewal that makes it last, which depends on no single node: the stopped node
 *   and every node that heard the report list its streams in a node-local database
 *   (`PENDING_DB`, kept across restarts and store replacements), and any of them that takes
 *   writes gives each stream a new epoch and records its unsure positions (`UnsureRange`,
 *   for resumes without an epoch) in a replicated write, conditionally: the write reads and
 *   sets a replicated marker per report and stream (`RENEWED_DB`), so of two nodes racing the
 *   later write set read a key the earlier one wrote, runs again and finds it done. Each
 *   stream is renewed once per report;
 * - pruning (`prune`): a marker is only there so a stream is not renewed twice for one report;
 *   once its renewal is older than `PRUNE_AFTER_MS` or the window, whichever is longer (the
 *   report is no longer told then, except by a stopped node restarting) and this node lists
 *   nothing of its report, it is removed through the log, alike on every node. A renewal that
 *   comes again after that (a node that listed the report and stayed away that long) costs
 *   clients one more snapshot, never a protection. This node's list loses its rows of reports
 *   naming every stream listed that long ago. The epochs and the unsure positions recorded by
 *   a renewal are kept for good: they are what protects a subscriber (a client without an
 *   epoch may come back any time).
 */
import type { Database, Key } from "lmdb";
import type { Table } from "../store/table.ts";
import { Packr } from "msgpackr";
import { log } from "../log/mod.ts";
import type { UnsureRange } from "../store/storage.ts";
import type { LogChangeFeed } from "./log_changes.ts";

/** Core NATS subject on which a node that stopped itself tells every node its report. */
export const UNSURE_SUBJECT = "sb.unsure";
/** How long, after a node found itself diverged, every node answers a join resuming one of
 * the streams it named at or past the first position it may differ at with a reset (a full
 * snapshot) instead of a replay, whatever the join's epoch (`ReplicationOptions.unsureMs`).
 * The epoch renewal (`UnsureStreams.renew`) makes it last for good. */
export const UNSURE_MS = 10 * 60_000;
/** How often the stopped node tells its report again within the window, for a node that
 * missed it or started since. */
const UNSURE_REPEAT_MS = 5000;
/** The node-local database of streams this node knows a report for and has not yet seen
 * renewed: keyed `[report, log, stream]`, valued with the stream's `UnsureRange`; a report
 * naming every stream is one row `[report, "", ""]`, valued `"all"` until this node listed
 * its streams, then when it listed them (`"listed"` in an earlier version). */
export const PENDING_DB = "cluster:unsure-renew";
/** The node-local list of an earlier version (the stopped node's own streams, keyed `[log,
 * stream]`, valued with the first unsure position): moved into `PENDING_DB` on open. */
export const LEGACY_DB = "cluster:unsure";
/** The replicated database of renewals done: keyed `[report, log, stream]`, valued with when. */
export const RENEWED_DB = "cluster:unsure-renewed";
/** Streams renewed per replicated write, at most; and the share of the largest NATS message
 * their rows may take (each stream's marker, epoch, range and list row are written, so the
 * write set stays well within a message). */
const RENEW_BATCH = 500;
/** Markers removed per replicated write, at most (each is read and removed). */
const PRUNE_BATCH = 500;
/** How old a renewal's marker must be, at least, before it is pruned (the window, when
 * longer): long past the time a stopped node takes to rebuild and renew, so a renewal found
 * done is found so. */
export const PRUNE_AFTER_MS = 24 * 3600_000;
const RENEW_PAYLOAD_SHARE = 1 / 8;

/** Per ordered log (by name), streams and their unsure positions. */
export type StreamRanges = Map<string, Map<string, UnsureRange>>;

/** What the module needs of its replicated store and link. */
export interface UnsureHost {
  /** This node's id (its own reports are not heard back). */
  readonly nodeId: string;
  /** A database as stored, outside the replicated write path (local reads and writes). */
  rawDb<V>(name: string): Database<V, Key>;
  /** A table as a replicated transaction records it. */
  db<V>(name: string): Table<V>;
  /** A replicated write transaction. */
  transaction<T>(fn: () => T): Promise<T>;
  /** The ordered logs' listeners of the store. */
  readonly changes: LogChangeFeed;
  /** Publishes on core NATS. */
  publish(subject: string, data: Uint8Array): void;
  /** The largest NATS message, in bytes. */
  readonly maxPayload: number;
  /** Whether the node takes writes now (not stopped, not closed). */
  writable(): boolean;
  /** Whether the store is closed. */
  closed(): boolean;
}

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** One row of `PENDING_DB` (a number: when a report naming every stream was listed). */
type Pending = UnsureRange | "all" | "listed" | number;

/** A new report id (random: unique across a node's reports and its restarts on a new disk). */
export function newReport(nodeId: string): string {
  const bytes = [...crypto.getRandomValues(new Uint8Array(6))].map((b) =>
    b.toString(16).padStart(2, "0")
  ).join("");
  return `${nodeId}:${bytes}`;
}

/** `a` widened to cover `b` (a `null` end is no end). */
function widen(a: UnsureRange | undefined, b: UnsureRange): UnsureRange {
  if (!a) return b;
  return [Math.min(a[0], b[0]), a[1] === null || b[1] === null ? null : Math.max(a[1], b[1])];
}

/** See the module comment. */
export class UnsureStreams {
  #host: UnsureHost;
  #windowMs: number;
  #pruneAfterMs: number;
  /** This node's own report while it is told (it stopped itself): its streams, merged with an
   * earlier report still in its window, and until when. */
  #told: { report: string; streams: StreamRanges | "all"; until: number } | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewing = false;
  /** Set when `renew` was called while it ran: it looks at the list once more. */
  #again = false;
  /** Runs `prune` every window, from the first `renew` on. */
  #pruneTimer: ReturnType<typeof setInterval> | undefined;
  #pruning = false;

  /** `pruneAfterMs`: how old a marker must be to be pruned (`PRUNE_AFTER_MS` or the window,
   * whichever is longer, unless given). */
  constructor(
    host: UnsureHost,
    windowMs: number,
    pruneAfterMs = Math.max(windowMs, PRUNE_AFTER_MS),
  ) {
    this.#host = host;
    this.#windowMs = windowMs;
    this.#pruneAfterMs = pruneAfterMs;
  }

  /** Moves the rows of an earlier version's list (`LEGACY_DB`) into `PENDING_DB`. */
  adoptLegacy(): void {
    const legacy = this.#host.rawDb<number>(LEGACY_DB);
    const pending = this.#host.rawDb<Pending>(PENDING_DB);
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
   * This node stopped itself: `written` are the streams it wrote at positions after the last
   * one a majority confirmed, with their positions (`"all"` when its store no longer tells).
   * Every node is told, at once and every `UNSURE_REPEAT_MS` within the window; returns the
   * streams to list for the renewal (`keep`): every stream of the store for `"all"`.
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
          const mine = streams.get(name) ?? new Map<string, UnsureRange>();
          for (const [stream, range] of list) mine.set(stream, widen(mine.get(stream), range));
          streams.set(name, mine);
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

  /** Lists `streams` of `report` for the renewal (inside a local transaction of the store),
   * widening a range already listed. */
  keep(report: string, streams: StreamRanges): void {
    const pending = this.#host.rawDb<Pending>(PENDING_DB);
    for (const [name, list] of streams) {
      for (const [stream, range] of list) {
        const known = pending.get([report, name, stream]);
        pending.put([report, name, stream], widen(Array.isArray(known) ? known : undefined, range));
      }
    }
  }

  /** Another node's report (`#tell`): its streams are told to the ordered logs for the
   * window, and listed here for the renewal (those not yet renewed), which starts at once
   * when this node takes writes. */
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
      const until = Date.now() + Math.min(ttl, this.#windowMs);
      if (all === 1) streams = "all";
      else {
        streams = new Map();
        for (const row of s ?? []) {
          if (!Array.isArray(row)) continue;
          // `to` is absent in reports of an earlier version: no known end.
          const [name, stream, at, to] = row as [unknown, unknown, unknown, unknown];
          if (typeof name !== "string" || typeof stream !== "string" || typeof at !== "number") {
            continue;
          }
          let list = streams.get(name);
          if (!list) streams.set(name, list = new Map());
          list.set(
            stream,
            widen(list.get(stream), [at, typeof to === "number" && to >= at ? to : null]),
          );
        }
      }
      this.#host.changes.historyReplaced(streams, until);
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

  /** Lists the streams of another node's report that are neither renewed nor listed yet;
   * whether it listed any. */
  async #remember(report: string, streams: StreamRanges | "all"): Promise<boolean> {
    const pending = this.#host.rawDb<Pending>(PENDING_DB);
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
        const wide = widen(Array.isArray(known) ? known : undefined, range);
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
   * Gives every stream listed in `PENDING_DB` a new epoch and records its range, in
   * replicated writes of at most `RENEW_BATCH` streams, each once per report (`RENEWED_DB`),
   * each write removing its rows from the list in the same commit (a crash in between renews
   * the rest on restart; at worst a stream is renewed twice, which costs a client one more
   * snapshot). Runs while this node takes writes; a failed write is retried every second.
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
   * Removes what can no longer matter (see the module comment): the markers (`RENEWED_DB`)
   * whose renewal is older than `pruneAfterMs` and whose report this node does not list, through
   * replicated writes of at most `PRUNE_BATCH` (alike on every node; of two nodes racing, the
   * later write set read a key the earlier one removed, runs again and finds nothing), and this
   * node's rows of reports naming every stream listed that long ago. Runs (the replicated
   * part) while this node takes writes; how many markers it removed. Every hour at most, from
   * the first `renew` on.
   */
  async prune(): Promise<number> {
    if (this.#pruning || this.#host.closed()) return 0;
    this.#pruning = true;
    let removed = 0;
    try {
      const old = Date.now() - this.#pruneAfterMs;
      const pending = this.#host.rawDb<Pending>(PENDING_DB);
      const listed = new Set<string>();
      const stale: Key[] = [];
      const dated: Key[] = [];
      for (const { key, value } of pending.getRange()) {
        const row = key as string[];
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
          if (typeof value === "number" && value < old && !listed.has((key as string[])[0])) {
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
    const pending = this.#host.rawDb<Pending>(PENDING_DB);
    const reports: string[] = [];
    for (const { key, value } of pending.getRange()) {
      if (value === "all") reports.push((key as string[])[0]);
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
  #batch(): [[string, string, string], UnsureRange][] {
    const out: [[string, string, string], UnsureRange][] = [];
    const limit = this.#host.maxPayload * RENEW_PAYLOAD_SHARE;
    let bytes = 0;
    for (const { key, value } of this.#host.rawDb<Pending>(PENDING_DB).getRange()) {
      if (!Array.isArray(value)) continue;
      const row = key as [string, string, string];
      out.push([row, value]);
      // Its key is read and written twice (marker, list), its stream written thrice (epoch, range).
      bytes += (row[0].length + row[1].length + row[2].length) * 3 + row[2].length * 3 + 64;
      if (out.length >= RENEW_BATCH || bytes >= limit) break;
    }
    return out;
  }

  /** Inside a replicated transaction: renews the rows of `batch` not renewed yet, marks them
   * renewed, and removes every row of it from the list; how many it renewed. */
  #renewIn(batch: [[string, string, string], UnsureRange][]): number {
    const pending = this.#host.db<Pending>(PENDING_DB);
    const done = this.#host.db<number>(RENEWED_DB);
    const ranges: StreamRanges = new Map();
    let count = 0;
    for (const [key, range] of batch) {
      pending.remove(key);
      if (done.get(key) !== undefined) continue;
      done.put(key, Date.now());
      const [, name, stream] = key;
      let known = ranges.get(name);
      if (!known) ranges.set(name, known = new Map());
      known.set(stream, widen(known.get(stream), range));
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

  /** Tells the other nodes this node's report (in messages within the payload limit), until
   * its window ends. */
  #tell(): void {
    const told = this.#told;
    const ttl = told ? told.until - Date.now() : 0;
    if (!told || ttl <= 0 || this.#host.closed()) {
      this.close();
      return;
    }
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
