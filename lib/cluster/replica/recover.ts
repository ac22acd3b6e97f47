/**
 * The recover part of the replicated store. NATS replicas can still diverge (nats-server
 * 2.9.10), so the nodes compare how they applied the log (`agreement.ts`, and the claims of
 * `claims.ts`); a node the majority disagrees with stops itself (`stopSelf`: no writes, nothing
 * applied, its store marked diverged), tells every node which streams its subscribers may hold
 * another history of (`unsure.ts`), then rebuilds its store from a snapshot and the stream
 * (`rebuild.ts`) and takes writes again once a majority confirms it. A rebuild that would
 * discard history a majority confirmed is refused (`confirmed_guard.ts`), and one whose inputs
 * did not change since the last is held (`stillHeld`).
 */
import type { Database, Key } from "lmdb";
import { StorageUnavailableError } from "../../store/errors.ts";
import { log } from "../../log/mod.ts";
import { rangesWritten } from "../log_changes.ts";
import { type Claim, ConfirmedClaims, type Verdict } from "../claims.ts";
import {
  DIVERGED_KEY,
  rebuildInputs,
  rebuildSource,
  replaceStore,
  wantSnapshot,
} from "../rebuild.ts";
import type { RebuildInputs, RebuildSource } from "../rebuild.ts";
import {
  firstConfirmedMismatch,
  type KeptHistory,
  type PositionRecord,
} from "../confirmed_guard.ts";
import { newReport, type StreamRanges } from "../unsure.ts";
import type { Applier } from "./apply.ts";
import { BEHIND, CHAIN_DB, codec, CONFLICT_WINDOW, POSITION_DB, RECENT_DB } from "./state.ts";
import type { LogMessage, ReplicaState } from "./state.ts";

/** Keys of the position database set when a node stops itself: the first position it applied
 * after the last one a majority confirmed (its clients' copies may differ from there), the id of
 * the report it tells (`unsure.ts`; the same across restarts, so each stream is renewed once),
 * and the last position confirmed (a rebuild ending on another history there is refused). */
export const UNSURE_FROM_KEY = "diverged_from";
export const UNSURE_REPORT_KEY = "unsure_report";
export const CONFIRMED_KEY = "confirmed";

/** The longest pause before a rebuild attempt (doubling from `rebuildPauseMs` at each attempt
 * that failed or ended diverged again). */
const MAX_REBUILD_PAUSE_MS = 30_000;

/** A held rebuild (see `stillHeld`); `wanted`: the position a snapshot was asked to reach,
 * asked again at each look (a request may be lost). */
type Hold = { peers?: string; read: string; logged: boolean; wanted?: number };

/** See the module comment. */
export class Recovery {
  /** Stream leader elections heard (JetStream's advisories). */
  elections = 0;
  #rebuildTimer: ReturnType<typeof setTimeout> | undefined;
  /** Rebuilds tried since the node last stopped itself. */
  #rebuildAttempts = 0;
  /** What the last rebuild read from NATS (`#readInputs`), read as it began. */
  #rebuildRead: RebuildInputs | undefined;
  /** Set while the next rebuild is held (`#stillHeld`): the others' reports when the rebuilt
   * store disagreed (none for a refusal), what that rebuild read, whether it was logged. */
  #hold: Hold | undefined;
  /** The last position a majority confirmed when this node stopped itself (0: none known; see
   * `CONFIRMED_KEY`), raised by the claims it hears while stopped. */
  #confirmed = 0;
  /** The other nodes' claims of what a majority confirmed, judged against this history. */
  #claims: ConfirmedClaims;
  /** The refusal last logged at error level by this process (`#refused`). */
  #refusedFor: string | undefined;
  #onRebuilt: (() => void)[] = [];

  constructor(private s: ReplicaState, private apply: Applier) {
    this.#claims = new ConfirmedClaims((seq) => s.chainAt(seq), () => s.applied);
  }

  /** After each local commit: the claims the position applied now reaches are judged. */
  applied(): void {
    for (const verdict of this.#claims.reached()) this.#onVerdict(verdict);
  }

  /** A majority of the nodes applied the log otherwise by `seq` (`PeerAgreement`). */
  disagreed(seq: number, peers: string[]): void {
    const s = this.s;
    if (s.diverged) return;
    // Found disagreeing with a store it rebuilt: the next rebuild is held until something it
    // depends on changes (`#stillHeld`).
    const rebuilt = s.rebuilding !== undefined && this.#rebuildRead !== undefined;
    this.#stopSelf(
      `cluster unavailable: this node applied the log differently from a majority of the nodes (${
        peers.join(", ")
      }) ` +
        `by position ${seq} (a NATS stream replica diverged); it rebuilds its store from the log`,
      rebuilt
        ? { peers: s.peers.inputs(), read: this.#rebuildRead!.full, logged: false, wanted: seq }
        : undefined,
    );
    // The log it rebuilt from holds other messages than the majority applied, by `seq`: a
    // snapshot reaching there (which the others agreed on) is read instead of them.
    if (rebuilt) wantSnapshot(s.link, seq);
  }

  /** What this node's heartbeats claim a majority confirmed (`claims.ts`): when stopped, what
   * it knew confirmed then; else the highest its peers' reports or claims showed. */
  claim(): Claim | undefined {
    const s = this.s;
    if (s.replacing) return undefined;
    const at = s.stopped
      ? this.#confirmed
      : Math.max(s.peers.confirmedUpTo(), this.#claims.learned);
    const chain = at > 0 ? s.chainAt(at) : undefined;
    return chain === undefined ? undefined : { at, chain };
  }

  /** Another node's heartbeat claims `claim` (see `claims.ts`). */
  hearClaim(node: string, claim: Claim): void {
    if (this.s.replacing || this.s.closed) return;
    const verdict = this.#claims.hear(node, claim);
    if (verdict) this.#onVerdict(verdict);
  }

  /** Registers `fn`, called each time this node replaced its store (`ReplicatedEnv`). */
  onRebuilt(fn: () => void): void {
    this.#onRebuilt.push(fn);
  }

  /** A claim judged: a stopped node that learns its history was confirmed further keeps that
   * much more from a rebuild (`#refused`); any other node not on that history stops. */
  #onVerdict(verdict: Verdict): void {
    const s = this.s;
    if (verdict.kind === "learned") {
      if (s.diverged === undefined) {
        return log.debug("cluster confirmed position learned from a heartbeat", {
          position: verdict.at,
        });
      }
      if (verdict.at <= this.#confirmed) return;
      log.warn("cluster confirmed history learned from another node's heartbeat", {
        position: verdict.at,
        was: this.#confirmed,
      });
      this.#confirmed = verdict.at;
      void s.rawDb<number>(POSITION_DB).put(CONFIRMED_KEY, verdict.at).catch(() => {});
      return;
    }
    // Also a node rebuilding on a replaced store: else it would serve once confirmed.
    if (s.diverged !== undefined) return;
    this.#stopSelf(
      `cluster unavailable: this node applied the log differently from a majority of the nodes (the history ${verdict.node} ` +
        `says they confirmed) by position ${verdict.at} (a NATS stream replica diverged); it rebuilds its store from the log`,
    );
  }

  /** A majority applied the log otherwise: no more writes (the queued ones fail), nothing more
   * applied until the store is replaced, the store marked diverged (a restart rebuilds it too),
   * the others told (and which streams' subscribers may hold the other history), a rebuild
   * scheduled. */
  #stopSelf(reason: string, hold?: Hold): void {
    const s = this.s;
    const first = !s.diverged && !s.rebuilding;
    this.#hold = hold;
    s.diverged = reason;
    s.rebuilding ??= reason;
    log.error(reason);
    const err = new StorageUnavailableError(reason);
    for (const t of s.queue.splice(0)) t.reject(err);
    this.apply.halt(false);
    // Stopped again while rebuilding (the log was compacted meanwhile): the store already
    // holds the majority's history, and what the old one published is being told.
    const from = first ? Math.max(s.peers.confirmedUpTo(), this.#claims.learned) + 1 : undefined;
    if (from !== undefined) this.#confirmed = from - 1;
    const report = from !== undefined ? newReport(s.link.nodeId) : undefined;
    const streams = from !== undefined && report !== undefined
      ? this.#markUnsure(from, report)
      : undefined;
    const state = s.rawDb<string | number>(POSITION_DB);
    void state.transaction(() => {
      state.put(DIVERGED_KEY, reason);
      if (from !== undefined) {
        state.put(UNSURE_FROM_KEY, from);
        state.put(CONFIRMED_KEY, from - 1);
        state.put(UNSURE_REPORT_KEY, report!);
      }
      if (streams) s.unsure.keep(report!, streams);
    }).catch(() => {});
    s.reportApplied();
    this.scheduleRebuild();
  }

  /** Positions `from` on were applied (and published) on another history: every node is told
   * which streams they wrote under `report` (`unsure.ts`; every stream when the positions kept
   * do not reach back to `from`); returns the streams to list for the epoch renewal. */
  #markUnsure(from: number, report: string): StreamRanges {
    const s = this.s;
    if (from <= s.applied - CONFLICT_WINDOW) return s.unsure.stopped(report, from, "all");
    const keys: [string, Key][] = [];
    for (const { value } of s.recentDb.getRange({ start: Math.max(1, from), end: s.applied + 1 })) {
      keys.push(...(Array.isArray(value) ? value : value.w));
    }
    return s.unsure.stopped(report, from, rangesWritten(keys));
  }

  /** A store marked diverged before a restart (or a crash in a rebuild) is rebuilt before the
   * node serves; returns whether it is still stopped (refused or failed: 503, tried later). */
  async startMarked(marked: string): Promise<boolean> {
    const s = this.s;
    s.diverged = s.rebuilding = marked;
    log.warn("cluster store marked diverged; rebuilding it before serving", { reason: marked });
    const position = s.rawDb<number>(POSITION_DB);
    const from = position.get(UNSURE_FROM_KEY) ?? 1;
    // A store marked by an earlier version kept only the first unsure position.
    this.#confirmed = position.get(CONFIRMED_KEY) ?? from - 1;
    // Its subscribers may have moved to other nodes meanwhile: told again, under the same report.
    const state = s.rawDb<string>(POSITION_DB);
    const report = state.get(UNSURE_REPORT_KEY) ?? newReport(s.link.nodeId);
    const streams = this.#markUnsure(from, report);
    await state.transaction(() => {
      state.put(UNSURE_REPORT_KEY, report);
      s.unsure.keep(report, streams);
    });
    // A failed read is tried again later like a refusal, not thrown (a restart fails alike).
    const outcome = await this.#replace().catch((err) => {
      log.warn("cluster rebuild failed; trying again later", { error: String(err) });
      return "failed" as const;
    });
    if (outcome === "closed") throw new Error("closed while rebuilding the store");
    if (outcome !== "replaced") return true;
    s.rebuilding = undefined;
    return false;
  }

  scheduleRebuild(): void {
    const s = this.s;
    if (this.#rebuildTimer || s.closed) return;
    // Once held, what it depends on is looked at every pause, no attempt counted.
    const base = s.opts.rebuildPauseMs ?? 1000;
    const held = this.#hold?.logged === true;
    const pause = held
      ? base
      : Math.min(MAX_REBUILD_PAUSE_MS, base * 2 ** Math.min(this.#rebuildAttempts, 10));
    if (!held) this.#rebuildAttempts++;
    this.#rebuildTimer = setTimeout(() => {
      void this.#rebuild().finally(() => {
        this.#rebuildTimer = undefined;
        // Failed, or diverged again meanwhile: later.
        if (s.diverged && !s.closed) this.scheduleRebuild();
      });
    }, pause);
  }

  /** Closing: no more rebuilds. */
  close(): void {
    clearTimeout(this.#rebuildTimer);
  }

  /** Replaces the store with one the majority agrees with (`rebuild.ts`), follows the log, and
   * takes writes again once caught up with its tail and confirmed by a majority. */
  async #rebuild(): Promise<void> {
    const s = this.s;
    if (!s.diverged || s.closed) return;
    if (this.#hold && (await this.#stillHeld())) return;
    if (!s.diverged || s.closed) return;
    log.warn("cluster node rebuilding its store", {
      applied: s.applied,
      attempt: this.#rebuildAttempts,
    });
    try {
      if ((await this.#replace()) !== "replaced") return;
    } catch (err) {
      log.warn("cluster rebuild failed; trying again later", { error: String(err) });
      return;
    }
    // Caught up with the tail as it is now, then confirmed by a majority.
    for (;;) {
      if (s.closed || s.diverged) return;
      if (s.failing === BEHIND) {
        // Compacted past the position rebuilt from meanwhile: again, from the newer snapshot.
        s.failing = undefined;
        return this.#stopSelf(
          "cluster unavailable: the log was compacted while this node rebuilt its store; it rebuilds again",
        );
      }
      const tail = await s.tail().catch(() => undefined);
      if (tail === undefined) {
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!(await this.apply.waitApplied(tail, Date.now() + 5000))) continue;
      s.rebuilding =
        `cluster unavailable: this node rebuilt its store and waits for a majority of the nodes to confirm its history (position ${tail})`;
      if (await s.peers.wait(tail, Date.now() + 5000)) break;
    }
    if (s.diverged || s.closed) return;
    s.rebuilding = undefined;
    this.#rebuildAttempts = 0;
    this.#rebuildRead = undefined;
    s.lastAppend = Date.now();
    log.info("cluster node rebuilt its store and takes writes again", { position: s.applied });
    void s.unsure.renew();
  }

  /** Swaps the store for the rebuild source in one local commit, nothing applied meanwhile,
   * and forgets the old history; "refused" (nothing replaced) when the source or the log holds
   * another history at a position a majority confirmed (`#refused`). */
  async #replace(): Promise<"replaced" | "refused" | "closed"> {
    const s = this.s;
    // Read first: anything that changes while the rebuild reads ends a later hold.
    this.#rebuildRead = await this.#readInputs();
    const { first } = await s.link.bounds();
    const source = await rebuildSource(s.link, first);
    try {
      if (await this.#refused(source)) return "refused";
      if (s.closed) return "closed";
      s.replacing = true;
      this.apply.halt(true);
      while (s.applying) await s.applying;
      if (s.closed) return "closed";
      s.rebuilding =
        `cluster unavailable: this node is rebuilding its store from the log (it applied the log differently from a majority of the nodes)`;
      await replaceStore({
        root: s.local.root,
        db: (name) => s.rawDb(name),
        keep: s.localDbs,
        replaced: [POSITION_DB, RECENT_DB],
      }, source);
      const was = s.applied;
      s.applied = source.position;
      s.loadHistory();
      s.buffer.clear();
      // What the ordered logs derived from the old store, and what clients were told from it,
      // is void before anything of the new one is applied.
      s.changes.replaced();
      for (const fn of this.#onRebuilt) {
        try {
          fn();
        } catch (err) {
          log.warn("cluster rebuild hook failed", { error: String(err) });
        }
      }
      s.peers.reset(s.applied);
      this.#claims.reset();
      s.diverged = undefined;
      // The new store holds the log's history: nothing of the old one is left to keep.
      this.#confirmed = 0;
      log.info("cluster store replaced", { position: s.applied, was });
    } finally {
      s.replacing = false;
      await source.dispose();
    }
    if (s.closed) return "closed";
    s.lastApply = Date.now();
    this.apply.follow();
    s.reportApplied();
    // The peers' latest reports judged now: a store rebuilt at the log's tail may apply nothing
    // more until the next write.
    s.peers.applied(s.applied);
    this.apply.scheduleRepair(s.knownTail);
    return "replaced";
  }

  /** What a rebuild reads from NATS (`rebuildInputs`) and the leader elections heard (a leader
   * re-elected between two looks may hold other messages); undefined when unreadable. */
  async #readInputs(): Promise<RebuildInputs | undefined> {
    const elections = this.elections;
    const read = await rebuildInputs(this.s.link).catch(() => undefined);
    return read === undefined
      ? undefined
      : { full: `${read.full} ${elections}`, refusal: `${read.refusal} ${elections}` };
  }

  /**
   * Whether the next rebuild is still held. A rebuild's outcome is a function of what it reads
   * (`#readInputs`) and of the others' reports it is judged by (`PeerAgreement#inputs`); while
   * they are unchanged, a rebuild found disagreeing would replay the log into the same
   * disagreement (run G1, bench/results/2026-11-27-cluster-G1-every-node-stopped.md: 14
   * replays), and a refused one into the same refusal (the log's growth aside). Held (logged
   * once) until one changes; a failed look counts as a change, a restart rebuilds once anyway.
   */
  async #stillHeld(): Promise<boolean> {
    const s = this.s;
    const hold = this.#hold!;
    // A refusal's hold (no peers judged it) is not ended by the log's tail growing.
    const read = (await this.#readInputs())?.[hold.peers === undefined ? "refusal" : "full"];
    const peers = hold.peers === undefined ? undefined : s.peers.inputs();
    if (this.#hold !== hold) return true; // stopped again meanwhile: that stop decides
    if (read !== undefined && read === hold.read && peers === hold.peers) {
      if (hold.wanted !== undefined) wantSnapshot(s.link, hold.wanted);
      if (!hold.logged) {
        hold.logged = true;
        log.warn(
          "cluster rebuild held: nothing it reads or is judged by has changed since its last attempt",
          { after: hold.peers === undefined ? "refused" : "disagreement", applied: s.applied },
        );
      }
      return true;
    }
    this.#hold = undefined;
    if (hold.logged) {
      const changed = read === undefined ? "unknown" : read !== hold.read ? "log" : "peers";
      log.warn("cluster rebuild no longer held", { changed });
    }
    return false;
  }

  /** Whether replacing the store by `source` and the log after it would discard history a
   * majority confirmed (`confirmed_guard.ts`): then the node stays stopped, the reason logged
   * and kept in the diverged mark, its store untouched, a snapshot reaching the confirmed
   * position asked of the others; the rebuild is tried again later. */
  async #refused(source: RebuildSource): Promise<boolean> {
    const s = this.s;
    if (this.#confirmed <= 0) return false;
    const kept = (recent: Database<unknown, Key>, chain: Database<unknown, Key>): KeptHistory => {
      const records = new Map<number, PositionRecord>();
      for (const { key, value } of recent.getRange({ end: this.#confirmed + 1 })) {
        // Older stores kept the keys alone, without the batch id: not compared.
        const { b, c } = Array.isArray(value) ? {} : (value as { b?: string; c?: string });
        if (typeof key === "number" && b !== undefined) {
          records.set(key, c === undefined ? { b } : { b, c });
        }
      }
      const checkpoints = new Map<number, string>();
      for (const { key, value } of chain.getRange({ end: this.#confirmed + 1 })) {
        if (typeof key === "number" && typeof value === "string") checkpoints.set(key, value);
      }
      return { records, checkpoints };
    };
    const mismatch = await firstConfirmedMismatch({
      confirmed: this.#confirmed,
      mine: kept(s.recentDb as Database<unknown, Key>, s.chainDb as Database<unknown, Key>),
      sourcePosition: source.position,
      source: source.store
        ? kept(source.store.db(RECENT_DB), source.store.db(CHAIN_DB))
        : { records: new Map(), checkpoints: new Map() },
      read: async (seq) => {
        const data = await s.log.read(seq);
        if (!data) return undefined;
        const msg = codec.unpack(data) as LogMessage;
        return msg.a ?? msg.b;
      },
    });
    if (!mismatch) return false;
    const wanted = source.position < this.#confirmed ? this.#confirmed : undefined;
    const where = mismatch.chained
      ? `at or before position ${mismatch.seq}`
      : `position ${mismatch.seq}`;
    const reason =
      `cluster unavailable: the log no longer holds writes a majority confirmed (${where}); ` +
      `the store is kept for an operator`;
    if (this.#refusedFor !== reason) {
      this.#refusedFor = reason;
      // `after`: the digests were last seen equal there (the difference lies between).
      const after = mismatch.after === undefined ? {} : { after: mismatch.after };
      log.error(reason, {
        confirmed: this.#confirmed,
        applied: s.applied,
        batch: mismatch.mine,
        log_batch: mismatch.theirs ?? null,
        ...after,
        snapshot_asked: wanted !== undefined,
      });
    } else {
      log.warn("cluster rebuild refused again", {
        position: mismatch.seq,
        chained: mismatch.chained ?? false,
        attempt: this.#rebuildAttempts,
      });
    }
    s.diverged = s.rebuilding = reason;
    if (wanted !== undefined) wantSnapshot(s.link, wanted);
    // Tried again once what it read changed (`#stillHeld`).
    this.#hold = this.#rebuildRead === undefined
      ? undefined
      : { read: this.#rebuildRead.refusal, logged: false, wanted };
    await s.rawDb<string>(POSITION_DB).put(DIVERGED_KEY, reason).catch(() => {});
    return true;
  }
}
