/**
 * The defence against a diverged NATS replica (nats-server 2.9.10's replicas can number messages
 * differently; docs/cluster-internals.md, "Replica divergence"), behind one interface,
 * `Divergence`, which the replicated store (`../replica/`) calls. Each node fingerprints the
 * positions it applies and reports them (`history.ts`, `agreement.ts`): a write is acknowledged
 * once a majority applied the log alike up to it. A node the majority disagrees with (or whose
 * history contradicts what a heartbeat says a majority confirmed) stops itself: no writes,
 * nothing applied, its store marked; it names the streams its subscribers may hold another
 * history of (`unsure.ts`), then rebuilds its store from a snapshot and the stream (`rebuild.ts`)
 * and takes writes once a majority confirms it. A rebuild that would lose confirmed history is
 * refused (`guard.ts`; the operator's way out is `refound.ts`), and one whose inputs did not
 * change since the last is held.
 */
import type { Key } from "lmdb";
import { Packr } from "msgpackr";
import { StorageUnavailableError } from "../../store/errors.ts";
import type { Table } from "../../store/table.ts";
import { log } from "../../log/mod.ts";
import { LOG_STREAM } from "../link.ts";
import { rangesWritten } from "../log_changes.ts";
import {
  APPLIED_SUBJECT,
  BEHIND,
  CHAIN_DB,
  CONFLICT_WINDOW,
  type LogMessage,
  RECENT_DB,
  type ReplicaState,
} from "../replica/state.ts";
import { PeerAgreement } from "./agreement.ts";
import { CHAIN_CHECKPOINT_EVERY, firstConfirmedMismatch, keptHistory } from "./guard.ts";
import {
  CHAIN_START,
  chainDigest,
  type Claim,
  ConfirmedClaims,
  positionDigest,
  type Verdict,
  WindowFingerprint,
} from "./history.ts";
import {
  CONFIRMED_KEY,
  DIVERGED_KEY,
  POSITION_DB,
  RebuildHold,
  type RebuildSource,
  rebuildSource,
  replaceStore,
  UNSURE_FROM_KEY,
  UNSURE_REPORT_KEY,
  wantSnapshot,
} from "./rebuild.ts";
import {
  LEGACY_DB,
  newReport,
  PENDING_DB,
  type StreamRanges,
  UNSURE_MS,
  UNSURE_SUBJECT,
  UnsureStreams,
} from "./unsure.ts";

export type { Claim } from "./history.ts";
export { UNSURE_MS } from "./unsure.ts";
export {
  CONFIRMED_KEY,
  DIVERGED_KEY,
  SNAPSHOT_BUCKET,
  SNAPSHOT_OBJECT,
  SNAPSHOT_WANTED_SUBJECT,
  type SnapshotWanted,
  UNSURE_FROM_KEY,
  UNSURE_REPORT_KEY,
} from "./rebuild.ts";

/** JetStream's advisory of a new leader of the log's stream. */
const ELECTED_SUBJECT = `$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${LOG_STREAM}`;
/** The longest pause before a rebuild attempt (doubling from `rebuildPauseMs`). */
const MAX_REBUILD_PAUSE_MS = 30_000;
const STOPPED = "cluster unavailable: this node applied the log differently from a majority of " +
  "the nodes";
const REBUILDS = "(a NATS stream replica diverged); it rebuilds its store from the log";

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** What a position's record gets from the defence: its batch id and chained digest. */
export type PositionMark = { b: string; c?: string };

/** What the defence needs of the store besides its state: its replicated tables and writes. */
export interface DivergenceHost {
  db<V>(name: string): Table<V>;
  transaction<T>(fn: () => T): Promise<T>;
  /** Declares a node-local database. */
  nodeLocal(name: string): void;
}

/** What the defence drives of the replica's log reader (`replica/apply.ts` `Applier`). */
export interface LogFollower {
  /** Stops reading the log (`consumer`: its consumer too). */
  halt(consumer: boolean): void;
  /** (Re)starts the log consumer after the position applied. */
  follow(): void;
  /** Whether position `seq` is applied by `deadline` (ms since the epoch). */
  waitApplied(seq: number, deadline: number): Promise<boolean>;
  /** Reads the positions missing up to `upTo`. */
  scheduleRepair(upTo?: number): void;
}

/** See the module comment. */
export class Divergence {
  #s: ReplicaState;
  #apply: LogFollower;
  #print!: WindowFingerprint;
  /** The chained digest at the position applied and at the last commit (undefined: a store of
   * an earlier version). */
  #chain: string | undefined;
  #committed: string | undefined;
  #peers: PeerAgreement;
  #claims: ConfirmedClaims;
  #unsure: UnsureStreams;
  #holds: RebuildHold;
  #rebuildTimer: ReturnType<typeof setTimeout> | undefined;
  #rebuildAttempts = 0;
  /** The last position a majority confirmed when this node stopped (`CONFIRMED_KEY`), raised by
   * claims heard while stopped: a rebuild must keep the history up to it. */
  #confirmed = 0;
  /** The refusal last logged at error level by this process. */
  #refusedFor: string | undefined;
  #onRebuilt: (() => void)[] = [];
  #unsubscribe: (() => void)[] = [];

  constructor(s: ReplicaState, apply: LogFollower, host: DivergenceHost) {
    this.#s = s;
    this.#apply = apply;
    this.#holds = new RebuildHold(s.link);
    this.reload();
    this.#claims = new ConfirmedClaims((seq) => this.#chainAt(seq), () => s.applied);
    this.#peers = new PeerAgreement(
      s.link.nodeId,
      (seq) => this.#print.at(seq),
      (seq, peers) => this.#disagreed(seq, peers),
    );
    this.#unsure = new UnsureStreams({
      nodeId: s.link.nodeId,
      rawDb: (name) => s.rawDb(name),
      db: (name) => host.db(name),
      transaction: (fn) => host.transaction(fn),
      changes: s.changes,
      publish: (subject, data) => s.link.publish(subject, data),
      get maxPayload() {
        return s.link.maxPayload;
      },
      writable: () => !s.closed && !s.stopped,
      closed: () => s.closed,
    }, s.opts.unsureMs ?? UNSURE_MS);
    host.nodeLocal(PENDING_DB);
    if (s.localDbs.has(LEGACY_DB)) this.#unsure.adoptLegacy();
  }

  // --- the apply path ---

  /** Loads the fingerprints and chained digest of the positions the store keeps. */
  reload(): void {
    const s = this.#s;
    const stored: [number, string][] = [];
    for (const { key, value } of s.recentDb.getRange({ start: s.applied - CONFLICT_WINDOW + 1 })) {
      // A skipped position recorded no keys (an applied one always has some); older stores
      // kept the keys alone.
      const [keys, batch] = Array.isArray(value) ? [value] : [value.w, value.b];
      stored.push([key as number, positionDigest(batch, keys.length > 0)]);
    }
    this.#print = new WindowFingerprint(CONFLICT_WINDOW, stored.sort((a, b) => a[0] - b[0]));
    const record = s.recentDb.get(s.applied);
    this.#chain = s.applied === 0 ? CHAIN_START : Array.isArray(record) ? undefined : record?.c;
    this.#committed = this.#chain;
  }

  /** This node's fingerprint at `seq` (a message carries its writer's at its `base`). */
  printAt(seq: number): string | undefined {
    return this.#print.at(seq);
  }

  /** Whether a write set was speculated on another history than this node's. */
  otherBase(base: number, print: string | undefined): boolean {
    const mine = print === undefined ? undefined : this.#print.at(base);
    return mine !== undefined && mine !== print;
  }

  /** Position `seq` held batch `id`, applied or skipped: what its record keeps. */
  add(seq: number, id: string, applied: boolean): PositionMark {
    this.#print.add(seq, positionDigest(id, applied));
    if (this.#chain !== undefined) this.#chain = chainDigest(this.#chain, seq, id);
    return this.#chain === undefined ? { b: id } : { b: id, c: this.#chain };
  }

  /** Inside the apply's commit: keeps the chained digest for good every so many positions. */
  persist(seq: number, mark: PositionMark): void {
    if (mark.c !== undefined && seq % CHAIN_CHECKPOINT_EVERY === 0) {
      this.#s.chainDb.put(seq, mark.c);
    }
  }

  /** The commit after position `seq` failed: what was added since is forgotten. */
  rollback(seq: number): void {
    this.#print.rollback(seq);
    this.#chain = this.#committed;
  }

  /** After each local commit: this node's report, and the reports and claims it reaches. */
  applied(seq: number): void {
    this.#committed = this.#chain;
    this.#report();
    this.#peers.applied(seq);
    for (const verdict of this.#claims.reached()) this.#onVerdict(verdict);
  }

  // --- acknowledgements and heartbeats ---

  /** Resolves true once a majority applied the log alike up to `seq`, false at `deadline` or
   * once a majority disagrees with this node. */
  confirm(seq: number, deadline: number): Promise<boolean> {
    return this.#peers.wait(seq, deadline);
  }

  /** Where the cluster's members come from (acknowledgements wait for a majority of them). */
  useMembers(members: () => string[]): void {
    this.#peers.useMembers(members);
  }

  /** What this node's heartbeats claim a majority confirmed: when stopped, what it knew then;
   * else the highest its peers' reports or claims showed (undefined: none, or no digest). */
  claim(): Claim | undefined {
    const s = this.#s;
    if (s.replacing) return undefined;
    const at = s.stopped
      ? this.#confirmed
      : Math.max(this.#peers.confirmedUpTo(), this.#claims.learned);
    const chain = at > 0 ? this.#chainAt(at) : undefined;
    return chain === undefined ? undefined : { at, chain };
  }

  /** Another node's heartbeat claims `claim`. */
  hearClaim(node: string, claim: Claim): void {
    if (this.#s.replacing || this.#s.closed) return;
    const verdict = this.#claims.hear(node, claim);
    if (verdict) this.#onVerdict(verdict);
  }

  /** Registers `fn`, called each time the store was replaced, before anything of the new one
   * is applied (what clients were told from the old one is void). */
  onRebuilt(fn: () => void): void {
    this.#onRebuilt.push(fn);
  }

  // --- lifecycle ---

  /** Rebuilds a store marked diverged (before a restart or a crash during a rebuild) first,
   * then listens to the other nodes. Returns whether the node is still stopped (refused or
   * failed: it serves 503 and tries again later). */
  async start(): Promise<boolean> {
    const s = this.#s;
    const stopped = await this.#startMarked();
    this.#unsubscribe.push(
      s.log.subscribe(UNSURE_SUBJECT, (data) => this.#unsure.heard(data)),
      s.log.subscribe(ELECTED_SUBJECT, () => void this.#holds.elections++),
      s.log.subscribe(APPLIED_SUBJECT, (data) => {
        try {
          const { n, q, h, d } = codec.unpack(data) as { n: string; q: number; h: string; d?: 1 };
          this.#peers.report(n, q, h, d === 1);
        } catch { /* not a report */ }
      }),
    );
    if (stopped) {
      this.#report();
      this.#scheduleRebuild();
    }
    return stopped;
  }

  /** The store caught up with the log: streams named unsure and not yet given a new epoch. */
  caughtUp(): void {
    void this.#unsure.renew();
  }

  /** Closing: no more rebuilds, reports or renewals. */
  close(): void {
    clearTimeout(this.#rebuildTimer);
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#unsure.close();
  }

  // --- private ---

  async #startMarked(): Promise<boolean> {
    const s = this.#s;
    const state = s.rawDb<string | number>(POSITION_DB);
    const marked = state.get(DIVERGED_KEY);
    if (!marked) return false;
    s.diverged = s.rebuilding = String(marked);
    log.warn("cluster store marked diverged; rebuilding it before serving", { reason: s.diverged });
    const from = Number(state.get(UNSURE_FROM_KEY) ?? 1);
    // A store marked by an earlier version kept only the first unsure position.
    this.#confirmed = Number(state.get(CONFIRMED_KEY) ?? from - 1);
    // Its subscribers may have moved to other nodes: told again, under the same report.
    const report = String(state.get(UNSURE_REPORT_KEY) ?? newReport(s.link.nodeId));
    const streams = this.#markUnsure(from, report);
    await state.transaction(() => {
      state.put(UNSURE_REPORT_KEY, report);
      this.#unsure.keep(report, streams);
    });
    // A failed attempt is tried again later, not thrown (a restart would fail alike).
    const outcome = await this.#replace().catch((err) => {
      log.warn("cluster rebuild failed; trying again later", { error: String(err) });
      return "failed" as const;
    });
    if (outcome === "closed") throw new Error("closed while rebuilding the store");
    if (outcome !== "replaced") return true;
    s.rebuilding = undefined;
    return false;
  }

  /** The chained digest at `seq` as the store keeps it (never `#chain`: an apply in flight
   * moved it before its commit lands). */
  #chainAt(seq: number): string | undefined {
    const s = this.#s;
    if (seq > s.applied || seq <= 0) return undefined;
    const record = s.recentDb.get(seq);
    if (record && !Array.isArray(record) && record.c !== undefined) return record.c;
    return s.chainDb.get(seq);
  }

  /** Tells the other nodes the fingerprint at the position applied. */
  #report(): void {
    const s = this.#s;
    const report = {
      n: s.link.nodeId,
      q: s.applied,
      h: this.#print.at(s.applied),
      ...(s.diverged ? { d: 1 } : {}),
    };
    s.link.publish(APPLIED_SUBJECT, codec.pack(report));
  }

  /** A majority applied the log otherwise by `seq`. Found so with a store it rebuilt, the next
   * rebuild is held until something it depends on changes, and a snapshot reaching `seq` (the
   * log holds other messages than the majority applied) is asked for. */
  #disagreed(seq: number, peers: string[]): void {
    const s = this.#s;
    if (s.diverged) return;
    const rebuilt = s.rebuilding !== undefined && this.#holds.began;
    this.#stopSelf(
      `${STOPPED} (${peers.join(", ")}) by position ${seq} ${REBUILDS}`,
      rebuilt ? { peers: this.#peers.inputs(), wanted: seq } : undefined,
    );
    if (rebuilt) wantSnapshot(s.link, seq);
  }

  /** A claim judged: a stopped node that learns its history was confirmed further keeps that
   * much more from a rebuild; any other node whose history is not the confirmed one stops (also
   * one rebuilding, not yet confirmed: else it would serve once the others confirm it). */
  #onVerdict(verdict: Verdict): void {
    const s = this.#s;
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
    if (s.diverged !== undefined) return;
    this.#stopSelf(
      `${STOPPED} (the history ${verdict.node} says they confirmed) by position ${verdict.at} ${REBUILDS}`,
    );
  }

  /** No more writes (queued ones fail), nothing applied, the store marked diverged, the others
   * told (and which streams may hold the other history: `#markUnsure`), a rebuild scheduled. */
  #stopSelf(reason: string, hold?: { peers: string; wanted: number }): void {
    const s = this.#s;
    const first = !s.diverged && !s.rebuilding;
    this.#holds.hold(hold);
    s.diverged = reason;
    s.rebuilding ??= reason;
    log.error(reason);
    const err = new StorageUnavailableError(reason);
    for (const t of s.queue.splice(0)) t.reject(err);
    this.#apply.halt(false);
    // Stopped again while rebuilding: the store already holds the majority's history.
    const state = s.rawDb<string | number>(POSITION_DB);
    if (first) {
      const from = Math.max(this.#peers.confirmedUpTo(), this.#claims.learned) + 1;
      this.#confirmed = from - 1;
      const report = newReport(s.link.nodeId);
      const streams = this.#markUnsure(from, report);
      void state.transaction(() => {
        state.put(DIVERGED_KEY, reason);
        state.put(UNSURE_FROM_KEY, from);
        state.put(CONFIRMED_KEY, from - 1);
        state.put(UNSURE_REPORT_KEY, report);
        this.#unsure.keep(report, streams);
      }).catch(() => {});
    } else void state.put(DIVERGED_KEY, reason).catch(() => {});
    this.#report();
    this.#scheduleRebuild();
  }

  /** This node applied positions `from` on on another history and published them: every node
   * is told which streams under `report` (every stream when the positions kept do not reach
   * back to `from`); returns the streams to list for the epoch renewal. */
  #markUnsure(from: number, report: string): StreamRanges {
    const s = this.#s;
    if (from <= s.applied - CONFLICT_WINDOW) return this.#unsure.stopped(report, from, "all");
    const keys: [string, Key][] = [];
    for (const { value } of s.recentDb.getRange({ start: Math.max(1, from), end: s.applied + 1 })) {
      keys.push(...(Array.isArray(value) ? value : value.w));
    }
    return this.#unsure.stopped(report, from, rangesWritten(keys));
  }

  /** After a pause doubling at each attempt; once held, what it depends on is looked at every
   * pause, no attempt counted. */
  #scheduleRebuild(): void {
    const s = this.#s;
    if (this.#rebuildTimer || s.closed) return;
    const base = s.opts.rebuildPauseMs ?? 1000;
    const held = this.#holds.logged;
    const pause = held
      ? base
      : Math.min(MAX_REBUILD_PAUSE_MS, base * 2 ** Math.min(this.#rebuildAttempts, 10));
    if (!held) this.#rebuildAttempts++;
    this.#rebuildTimer = setTimeout(() => {
      void this.#rebuild().finally(() => {
        this.#rebuildTimer = undefined;
        if (s.diverged && !s.closed) this.#scheduleRebuild(); // failed, or diverged again
      });
    }, pause);
  }

  /** Replaces the store, follows the log, and once caught up with its tail and confirmed by a
   * majority takes writes again. */
  async #rebuild(): Promise<void> {
    const s = this.#s;
    if (!s.diverged || s.closed) return;
    if (await this.#holds.held(() => this.#peers.inputs(), s.applied)) return;
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
    for (;;) {
      if (s.closed || s.diverged) return;
      if (s.failing === BEHIND) {
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
      if (!(await this.#apply.waitApplied(tail, Date.now() + 5000))) continue;
      s.rebuilding =
        `cluster unavailable: this node rebuilt its store and waits for a majority of the nodes to confirm its history (position ${tail})`;
      if (await this.#peers.wait(tail, Date.now() + 5000)) break;
    }
    if (s.diverged || s.closed) return;
    s.rebuilding = undefined;
    this.#rebuildAttempts = 0;
    this.#holds.end();
    s.lastAppend = Date.now();
    log.info("cluster node rebuilt its store and takes writes again", { position: s.applied });
    this.caughtUp();
  }

  /** Swaps the store for the rebuild source in one local commit, nothing applied meanwhile, and
   * forgets the old history; "refused" when that would lose confirmed history. */
  async #replace(): Promise<"replaced" | "refused" | "closed"> {
    const s = this.#s;
    await this.#holds.begin();
    const source = await rebuildSource(s.link, (await s.link.bounds()).first);
    try {
      if (await this.#refused(source)) return "refused";
      if (s.closed) return "closed";
      s.replacing = true;
      this.#apply.halt(true);
      while (s.applying) await s.applying;
      if (s.closed) return "closed";
      s.rebuilding =
        `cluster unavailable: this node is rebuilding its store from the log (it applied the log differently from a majority of the nodes)`;
      const live = { root: s.local.root, db: (name: string) => s.rawDb(name) };
      await replaceStore({ ...live, keep: s.localDbs, replaced: [POSITION_DB, RECENT_DB] }, source);
      const was = s.applied;
      s.applied = source.position;
      s.loadHistory();
      this.reload();
      s.buffer.clear();
      // What the ordered logs and clients were told from the old store is void, before anything
      // of the new one is applied.
      s.changes.replaced();
      for (const fn of this.#onRebuilt) {
        try {
          fn();
        } catch (err) {
          log.warn("cluster rebuild hook failed", { error: String(err) });
        }
      }
      this.#peers.reset(s.applied);
      this.#claims.reset();
      s.diverged = undefined;
      this.#confirmed = 0;
      log.info("cluster store replaced", { position: s.applied, was });
    } finally {
      s.replacing = false;
      await source.dispose();
    }
    if (s.closed) return "closed";
    s.lastApply = Date.now();
    this.#apply.follow();
    this.#report();
    // The peers' latest reports judged now (a store rebuilt at the tail applies nothing more
    // until the next write).
    this.#peers.applied(s.applied);
    this.#apply.scheduleRepair(s.knownTail);
    return "replaced";
  }

  /** Whether `source` and the log after it would lose history a majority confirmed: the node
   * then stays stopped, its store kept for an operator, asks for a snapshot reaching the
   * confirmed position, and tries again once what it read changed. */
  async #refused(source: RebuildSource): Promise<boolean> {
    const s = this.#s;
    if (this.#confirmed <= 0) return false;
    const upTo = this.#confirmed;
    const mismatch = await firstConfirmedMismatch({
      confirmed: upTo,
      mine: keptHistory(s.recentDb, s.chainDb, upTo),
      sourcePosition: source.position,
      source: source.store
        ? keptHistory(source.store.db(RECENT_DB), source.store.db(CHAIN_DB), upTo)
        : { records: new Map(), checkpoints: new Map() },
      read: async (seq) => {
        const data = await s.log.read(seq);
        const msg = data ? codec.unpack(data) as LogMessage : undefined;
        return msg && (msg.a ?? msg.b);
      },
    });
    if (!mismatch) return false;
    const wanted = source.position < upTo ? upTo : undefined;
    const where = mismatch.chained
      ? `at or before position ${mismatch.seq}`
      : `position ${mismatch.seq}`;
    const reason =
      `cluster unavailable: the log no longer holds writes a majority confirmed (${where}); ` +
      `the store is kept for an operator`;
    if (this.#refusedFor !== reason) {
      this.#refusedFor = reason;
      log.error(reason, {
        confirmed: upTo,
        applied: s.applied,
        batch: mismatch.mine,
        log_batch: mismatch.theirs ?? null,
        ...(mismatch.after === undefined ? {} : { after: mismatch.after }),
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
    this.#holds.hold({ wanted });
    await s.rawDb<string>(POSITION_DB).put(DIVERGED_KEY, reason).catch(() => {});
    return true;
  }
}
