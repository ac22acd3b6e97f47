/**
 * The clustered store: the same LMDB environment and transaction API as one node, with every
 * write ordered through one replicated JetStream log, so every node's LMDB holds the same
 * data after the same sequence of writes.
 *
 * A write transaction runs speculatively: on an LMDB read snapshot with its puts and removes
 * kept in memory over it (`overlay.ts`; the main thread never waits for LMDB's write lock),
 * recording each key it reads and each `put`/`remove` it makes (its write set), against the
 * local state at log position `base`. The write set is appended to the log; every
 * node, the writer included, applies the log strictly in order, each run of messages in one
 * local commit, and skips a write set that read a key written after its `base`
 * (`conflicts.ts`: optimistic concurrency, decided alike on every node).
 *
 * The stream is the only truth: every node, the writer included, applies at each position the
 * message read from the stream's leader there (64 positions at a time); a publish ack's
 * sequence number, a consumer's delivery and another node's announcement are only hints of how
 * far to read (a consumer lives on any replica, and a replica may have diverged). The writer's
 * transaction resolves once this node has applied its batch from the stream (the batch id found
 * at a position, applied, not skipped); a skipped one runs again on fresh state; a batch not
 * found within the write deadline (counted from the request's arrival) fails with 503. A
 * publish whose reply is lost is retried with the same message id (stored once); while one
 * batch waits for a late reply the next ones go out beside it instead of queueing behind it.
 * Products keep their code: a transaction may run more than once, so it must be a plain
 * function of the stored state, which it already is.
 *
 * Because NATS replicas can still diverge (nats-server 2.9.10), the nodes also compare how they
 * applied the log (`agreement.ts`): a write is acknowledged once a majority of the nodes applied
 * the log alike up to it, and a node the majority disagrees with stops taking writes and
 * applying, tells every node which streams it may have sent its subscribers entries of its other
 * history of (`unsure.ts`: a reset for a while, then a new epoch for good), then rebuilds its store
 * from a snapshot and the stream (`rebuild.ts`; the ordered logs drop what they derived from the
 * old one) and takes writes again once a majority confirms its history.
 *
 * Node-local databases (those the products declare with `nodeLocal`: webhook outboxes, the
 * apps table) are recorded too but applied only by the node that wrote them; a transaction
 * that writes only those commits locally.
 *
 * Built around one node's store (`StoreEnv`, composition): the same LMDB environment, opened
 * without a sync per commit, which it commits into; to the ordered logs it hands other nodes'
 * changes as typed events (`LogChangeFeed`), and its commit path is `DirectCommits`.
 */
import type { Database, Key, RootDatabase, Transaction } from "lmdb";
import { Packr } from "msgpackr";
import { asStorageError, StorageUnavailableError } from "../store/errors.ts";
import { emptyReads, type ReadSet, RecentWrites } from "./conflicts.ts";
import { StoreEnv } from "../store/env.ts";
import { DirectCommits } from "../store/direct_commits.ts";
import type { Commits, RemoteChanges, Storage } from "../store/storage.ts";
import { LogChangeFeed, rangesWritten, type Write } from "./log_changes.ts";
import { forkedWrites } from "./fork.ts";
import { log } from "../log/mod.ts";
import { type ClusterLink, LOG_STREAM } from "./link.ts";
import { requestPositions } from "./read_your_writes.ts";
import { CHAIN_START, chainDigest, positionDigest, WindowFingerprint } from "./fingerprint.ts";
import { PeerAgreement } from "./agreement.ts";
import { type Claim, ConfirmedClaims, type Verdict } from "./claims.ts";
import {
  DIVERGED_KEY,
  type RebuildInputs,
  rebuildInputs,
  type RebuildSource,
  rebuildSource,
  replaceStore,
  wantSnapshot,
} from "./rebuild.ts";
import {
  CHAIN_CHECKPOINT_EVERY,
  firstConfirmedMismatch,
  type KeptHistory,
  type PositionRecord,
} from "./confirmed_guard.ts";
import { WriteOverlay } from "./overlay.ts";
import { ReplicatedTable, type RunningJob, type SnapshotRun } from "./replicated_table.ts";
import type { Table } from "../store/table.ts";
import {
  LEGACY_DB,
  newReport,
  PENDING_DB,
  type StreamRanges,
  UNSURE_MS,
  UNSURE_SUBJECT,
  UnsureStreams,
} from "./unsure.ts";

export { UNSURE_MS } from "./unsure.ts";

/** The database recording the log position applied (key `applied`). */
export const POSITION_DB = "cluster:state";
/** The database listing the node-local databases declared (`nodeLocal`), by name: their rows
 * are one node's, so a node starting from another's snapshot clears them (`snapshots.ts`). */
export const NODE_LOCAL_DB = "cluster:node-local";
/** The key of `POSITION_DB` set in a store restored from a snapshot that listed no node-local
 * databases (one written by an earlier version): each database declared node-local is then
 * emptied on its first declaration (`nodeLocal`; see `readyRestored` in `snapshots.ts`). */
export const UNLISTED_NODE_LOCAL = "unlisted-node-local";
/** Databases applied only on the node that wrote them, before any is declared (the first two
 * are kept alike on every node by the apply itself). */
const CLUSTER_LOCAL_DBS = [POSITION_DB, "cluster:recent", NODE_LOCAL_DB];

/** The database keeping the chained digest of the history (`fingerprint.ts` `chainDigest`)
 * every `CHAIN_CHECKPOINT_EVERY` positions, for good (kept alike on every node by the apply, like
 * `cluster:recent`, whose records carry the digest at each recent position). */
const CHAIN_DB = "cluster:chain";

/** Positions a write set's `base` may lag behind the position it lands at before it counts as
 * stale whatever it read (the window of written keys every node keeps). */
const CONFLICT_WINDOW = 4096;

/** Write sets per log message, at most (more transactions wait for the next message). */
const MAX_BATCH = 256;
/** Log messages applied per local commit, at most, their bytes, and the time spent decoding
 * them: a catch-up (a node back from a freeze, a consumer's backlog) is decoded, checked,
 * written and told to the ordered logs in bounded slices, and the event loop turns between
 * slices, so requests (`/readyz`) are answered meanwhile. Each message is applied whole, in
 * log order: only where one slice ends and the next begins depends on these. */
const MAX_APPLY = 128;
const MAX_APPLY_BYTES = 256 * 1024;
const MAX_APPLY_DECODE_MS = 10;

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** One log message: the writing node, its message id, the position its reads saw, what it read
 * and its write set, the writer's fingerprint at `base` (`fingerprint.ts`; absent in messages
 * from older nodes), and, when it is a batch published again under a new message id, the
 * batch's first id (`a`: both count as one batch, see `#append`). */
interface LogMessage {
  o: string;
  b: string;
  a?: string;
  base: number;
  r: ReadSet;
  w: Write[];
  h?: string;
}

/** How a batch written here ended when the log reached it, and at which position. */
interface Outcome {
  done: "applied" | "stale" | null;
  seq: number;
}

interface Task {
  fn: () => unknown;
  /** When the write's answer is due (its arrival plus the write deadline). */
  deadline: number;
  /** Told the log position of the write once applied (read-your-writes). */
  position?: (seq: number) => void;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
  writes?: Write[];
  /** Set once the task ran against the log's tail as it was after a failure. */
  checked?: boolean;
}

/** A wait for a log position to be applied (or for a batch's outcome). */
interface Waiter {
  seq: number;
  outcome?: Outcome;
  wake: () => void;
}

const ABORT = Symbol("speculation done");
/** Why a node cannot go on (see `snapshots.ts`: a restart restores the newest snapshot). */
const BEHIND =
  "cluster unavailable: the log was compacted past this node's position; restart the node";
/** Core NATS subject on which a writer announces the position at which it found its batch in
 * the stream (a hint only: the others read that position from the stream, never from it). */
const HEAD_SUBJECT = "sb.head";
/** Core NATS subject on which each node reports its fingerprint at the position it reached
 * (`agreement.ts`). */
const APPLIED_SUBJECT = "sb.applied";

/** The key (in the position database) of the first position a stopped node applied after the
 * last one a majority confirmed (its clients' copies may differ from there). */
export const UNSURE_FROM_KEY = "diverged_from";
/** The key (in the position database) of the id of the report a stopped node tells
 * (`unsure.ts`): the same across its restarts, so each stream is renewed once for it. */
export const UNSURE_REPORT_KEY = "unsure_report";
/** The key (in the position database) of the last position a majority confirmed when this
 * node stopped itself: its store's history up to there is acknowledged, and a rebuild that
 * would end on another history there is refused (`confirmed_guard.ts`). */
export const CONFIRMED_KEY = "confirmed";

/** The longest pause before an attempt at rebuilding a node that stopped itself (the pause
 * doubles from `rebuildPauseMs` at each attempt that failed or ended diverged again). */
const MAX_REBUILD_PAUSE_MS = 30_000;

/** How long one publish attempt waits for its reply before it is retried (same message id). */
const PUBLISH_TRY_MS = 1000;
/** A batch out this long without an outcome no longer holds the next batches back. */
const SLOW_BATCH_MS = 250;
/** Batches in flight at once, at most. */
const MAX_INFLIGHT = 8;
/** Log positions read from the stream at once, at most. */
const READ_AHEAD = 64;
/** Reads failing this long on one NATS server, while the log grows (other nodes' writes get in,
 * or this node's publishes are stored), make the node move to another server; failing while the
 * log does not grow (JetStream itself has no leader: every server fails alike), they do so only
 * after `READS_STUCK_MS`. */
const READS_FAILING_MS = 6000;
const READS_STUCK_MS = 24_000;
/** Reads refused with "JetStream temporarily unavailable" (10008) never make the node move
 * blind: the link itself looks for a server that answers and moves there (`ClusterLink#seek`);
 * moving blind landed on other refusing servers, every 3 s, for as long as JetStream elected. */

/** `seq` as 8 bytes (big-endian float). */
function encodeSeq(seq: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setFloat64(0, seq);
  return out;
}

/** The inverse of `encodeSeq` (NaN for anything else). */
function decodeSeq(data: Uint8Array): number {
  return data.byteLength === 8 ? new DataView(data.buffer, data.byteOffset).getFloat64(0) : NaN;
}

/** A held rebuild (see `ReplicatedEnv#stillHeld`); `wanted`: the position a snapshot was asked
 * to reach (`rebuild.ts` `wantSnapshot`), asked again at each look (a request may be lost). */
type Hold = { peers?: string; read: string; logged: boolean; wanted?: number };

/** JetStream's advisory of a new leader of the log's stream. */
const ELECTED_SUBJECT = `$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${LOG_STREAM}`;

/** Tunables, mostly for tests. */
export interface ReplicationOptions {
  /** A write not applied within this many ms fails with 503 (its outcome is then unknown). */
  writeDeadlineMs: number;
  /** Probability with which a message from the log consumer is dropped (a fault hook for
   * tests: the node must repair the gap from the stream). */
  dropRate: number;
  /** A log position this node applies as if it had read another message there (a fault hook
   * for tests: a NATS replica that diverged); 0 for none. */
  forkAt?: number;
  /** A log position this node reads another message at once it stopped itself (its rebuild's
   * check and replay; a fault hook for tests: a stream leader whose replica holds another
   * history at a position the majority confirmed); 0 for none. */
  otherAt?: number;
  /** A log position past which this node drops the other nodes' reports until it first stops
   * itself (a fault hook for tests: reports core NATS lost, so it knows less confirmed than
   * the others do, `claims.ts`); 0 for none. */
  deafAfter?: number;
  /** How long a node that stopped itself waits before it rebuilds its store (default 1000 ms;
   * doubled at each further attempt). */
  rebuildPauseMs?: number;
  /** How long joins of the streams a stopped node names get a reset by that alone (default
   * `UNSURE_MS`). */
  unsureMs?: number;
}

/** See the module comment. */
export class ReplicatedEnv implements Storage {
  /** The commit path of this store: each transaction on its own (see `DirectCommits`). */
  readonly commits: Commits = new DirectCommits(this);
  /** The LMDB environment this store applies the log into. */
  #local: StoreEnv;
  /** Databases applied only on the node that wrote them (see the module comment). */
  #localDbs = new Set(CLUSTER_LOCAL_DBS);
  #changes = new LogChangeFeed();
  #link: ClusterLink;
  #opts: ReplicationOptions;
  #raw = new Map<string, Database>();
  #tables = new Map<string, ReplicatedTable>();
  /** The running job, as the tables see it (see `ReplicatedTable`). */
  #job: RunningJob = (() => {
    // deno-lint-ignore no-this-alias
    const env = this;
    return {
      get recording() {
        return env.#recording;
      },
      get reading() {
        return env.#reading;
      },
      get spec() {
        return env.#spec;
      },
    };
  })();
  #state: Database<number, Key>;
  #recording: Write[] | null = null;
  #reading: ReadSet | null = null;
  /** The speculative run on a snapshot going on, if any. */
  #spec: SnapshotRun | null = null;
  /** Calls that sent a speculative run to a write transaction, logged once each. */
  #unsupportedSeen = new Set<string>();
  #recent: RecentWrites;
  #print: WindowFingerprint;
  #peers: PeerAgreement;
  /** Set once a majority of the nodes applied the log differently: no more writes here. */
  #diverged: string | undefined;
  /** Set from then until the rebuilt store caught up and a majority confirmed it (`#rebuild`). */
  #rebuilding: string | undefined;
  /** While the store is being replaced: nothing is applied. */
  #replacing = false;
  #rebuildTimer: ReturnType<typeof setTimeout> | undefined;
  /** Rebuilds tried since the node last stopped itself. */
  #rebuildAttempts = 0;
  /** What the last rebuild read from NATS (`#readInputs`), read as it began. */
  #rebuildRead: RebuildInputs | undefined;
  /** Set while the next rebuild is held (`#stillHeld`): the others' reports when the rebuilt
   * store was found disagreeing (none for a refused rebuild: they do not decide a refusal),
   * what that rebuild read, and whether the hold was logged (it then looks every pause). */
  #hold: Hold | undefined;
  /** Stream leader elections heard (JetStream's advisories), and their subscription. */
  #elections = 0;
  #unsubscribeElections: (() => void) | undefined;
  /** The last position a majority confirmed when this node stopped itself (0: none known; see
   * `CONFIRMED_KEY`), raised by the claims it hears while stopped (`claims.ts`). */
  #confirmed = 0;
  /** The other nodes' claims of what a majority confirmed, judged against this history. */
  #claims = new ConfirmedClaims((seq) => this.#chainAt(seq), () => this.#applied);
  /** The refusal last logged at error level by this process (`#refused`). */
  #refusedFor: string | undefined;
  /** Whether the fault hook `otherAt` plays (from the node's stop on). */
  #otherActive = false;
  #onRebuilt: (() => void)[] = [];
  /** Streams whose subscribers may hold another history: the window and the epoch renewal. */
  #unsure: UnsureStreams;
  #unsubscribeUnsure: (() => void) | undefined;
  #unsubscribeApplied: (() => void) | undefined;
  #recentDb: Database<[string, Key][] | { w: [string, Key][]; b?: string; c?: string }, Key>;
  #chainDb: Database<string, Key>;
  /** The chained digest of the history at the position applied (undefined: unknown, a store
   * written by a version without it; no digest is then recorded until the store is replaced). */
  #chain: string | undefined;
  #queue: Task[] = [];
  /** Batches out (published, no outcome yet), with when each went out. */
  #inflight = new Set<{ since: number }>();
  #pumpTimer: ReturnType<typeof setTimeout> | undefined;
  /** When this node last had a batch found in the log, and last applied anything. */
  #lastAppend = Date.now();
  #lastApply = Date.now();
  /** The log's last position as last seen (for the lag). */
  #knownTail = 0;
  /** Batches written here and not yet reached by the log. */
  #awaiting = new Map<string, Outcome>();
  #applied: number;
  #buffer = new Map<number, Uint8Array>();
  /** The drain of the buffered log (`#drain`), and the one commit of it running. */
  #applying: Promise<void> | undefined;
  #applyingRun: Promise<void> | undefined;
  #appliedWaiters: Waiter[] = [];
  #repairTimer: ReturnType<typeof setTimeout> | undefined;
  /** The last position the consumer delivered, and for how many tail checks in a row it was
   * behind the position applied (a consumer served by a lagging replica). */
  #consumerSeq = 0;
  #consumerBehind = 0;
  /** When a read last failed, since when reads have failed without a success in between, and
   * whether the last read found the position not there yet. */
  #repairFailedAt = 0;
  #readsFailingSince = 0;
  /** The log's last position known when reads started failing. */
  #tailWhenFailing = 0;
  #repairEmpty = false;
  /** Highest position known to exist that repair should reach. */
  #repairTarget = 0;
  #tailTimer: ReturnType<typeof setInterval> | undefined;
  #tailRequest: Promise<number> | undefined;
  #consumer: { stop(): void } | undefined;
  #unsubscribeTail: (() => void) | undefined;
  #failing: string | undefined;
  #closed = false;
  /** The local store's directory (a failed commit's error reads its free space). */
  #path: string;

  constructor(path: string, link: ClusterLink, opts: ReplicationOptions) {
    // The log (a JetStream quorum) is the durable copy; the local commit need not wait for the
    // disk: a node that crashes resumes from the position its last commit recorded.
    this.#local = new StoreEnv(path, false);
    this.#path = path;
    this.#link = link;
    this.#opts = opts;
    this.#state = this.#rawDb<number>(POSITION_DB);
    this.#applied = this.#state.get("applied") ?? 0;
    this.#recentDb = this.#rawDb("cluster:recent");
    this.#chainDb = this.#rawDb<string>(CHAIN_DB);
    this.#chain = this.#loadChain();
    for (const name of this.#rawDb(NODE_LOCAL_DB).getKeys()) this.#localDbs.add(name as string);
    [this.#recent, this.#print] = this.#loadHistory();
    this.#unsure = new UnsureStreams({
      nodeId: link.nodeId,
      rawDb: (name) => this.#rawDb(name),
      db: (name) => this.db(name),
      transaction: (fn) => this.transaction(fn),
      changes: this.#changes,
      publish: (subject, data) => this.#link.publish(subject, data),
      get maxPayload() {
        return link.maxPayload;
      },
      writable: () => !this.#closed && !this.stopped,
      closed: () => this.#closed,
    }, opts.unsureMs ?? UNSURE_MS);
    this.nodeLocal(PENDING_DB);
    if (this.#localDbs.has(LEGACY_DB)) this.#unsure.adoptLegacy();
    this.#peers = new PeerAgreement(link.nodeId, (seq) => this.#print.at(seq), (seq, peers) => {
      if (this.#diverged) return;
      // Found disagreeing with a store it rebuilt: the next rebuild is held until something it
      // depends on changes (`#stillHeld`).
      const rebuilt = this.#rebuilding !== undefined && this.#rebuildRead !== undefined;
      this.#stopSelf(
        `cluster unavailable: this node applied the log differently from a majority of the nodes (${
          peers.join(", ")
        }) ` +
          `by position ${seq} (a NATS stream replica diverged); it rebuilds its store from the log`,
        rebuilt
          ? {
            peers: this.#peers.inputs(),
            read: this.#rebuildRead!.full,
            logged: false,
            wanted: seq,
          }
          : undefined,
      );
      // The log it rebuilt from holds other messages than the majority applied, by `seq`: a
      // snapshot reaching there (which the others agreed on) is read instead of them.
      if (rebuilt) wantSnapshot(this.#link, seq);
    });
  }

  /** The recent writes and fingerprints of the positions the store keeps (up to the one
   * applied). */
  #loadHistory(): [RecentWrites, WindowFingerprint] {
    const stored: [number, [string, Key][], string?][] = [];
    for (
      const { key, value } of this.#recentDb.getRange({
        start: this.#applied - CONFLICT_WINDOW + 1,
      })
    ) {
      // Older stores kept the keys alone, without the batch id.
      stored.push(
        Array.isArray(value) ? [key as number, value] : [key as number, value.w, value.b],
      );
    }
    // A position whose write set was skipped recorded no keys (an applied one always has some).
    return [
      new RecentWrites(CONFLICT_WINDOW, stored),
      new WindowFingerprint(
        CONFLICT_WINDOW,
        stored.sort((a, b) => a[0] - b[0]).map((
          [seq, keys, batch],
        ) => [seq, positionDigest(batch, keys.length > 0)]),
      ),
    ];
  }

  /** The chained digest at position `seq` as this store keeps it (one of the positions it
   * keeps a record of, or a checkpoint), or undefined. Never `#chain`: an apply in flight has
   * moved it past the position applied before its commit lands. */
  #chainAt(seq: number): string | undefined {
    if (seq > this.#applied || seq <= 0) return undefined;
    const record = this.#recentDb.get(seq);
    if (record && !Array.isArray(record) && record.c !== undefined) return record.c;
    return this.#chainDb.get(seq);
  }

  /** What this node's heartbeats claim a majority confirmed (`claims.ts`): when stopped, the
   * position it knew confirmed then (its store untouched since); else the highest its peers'
   * reports or claims showed. Undefined when it knows none or keeps no digest there. */
  claim(): Claim | undefined {
    if (this.#replacing) return undefined;
    const at = this.stopped
      ? this.#confirmed
      : Math.max(this.#peers.confirmedUpTo(), this.#claims.learned);
    const chain = at > 0 ? this.#chainAt(at) : undefined;
    return chain === undefined ? undefined : { at, chain };
  }

  /** Another node's heartbeat claims `claim` (see `claims.ts`). */
  hearClaim(node: string, claim: Claim): void {
    if (this.#replacing || this.#closed) return;
    const verdict = this.#claims.hear(node, claim);
    if (verdict) this.#onVerdict(verdict);
  }

  /**
   * A claim judged: a stopped node that learns its history was confirmed further than it knew
   * keeps that much more from a rebuild (`#refused`); any other node whose history is not the
   * one a majority confirmed stops as one the majority disagrees with does.
   */
  #onVerdict(verdict: Verdict): void {
    if (verdict.kind === "learned") {
      if (this.#diverged === undefined) {
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
      void this.#rawDb<number>(POSITION_DB).put(CONFIRMED_KEY, verdict.at).catch(() => {});
      return;
    }
    // Also a node rebuilding on a replaced store (not yet confirmed, so it acknowledges nothing):
    // else it would serve once the others on the same log confirm it.
    if (this.#diverged !== undefined) return;
    this.#stopSelf(
      `cluster unavailable: this node applied the log differently from a majority of the nodes (the history ${verdict.node} ` +
        `says they confirmed) by position ${verdict.at} (a NATS stream replica diverged); it rebuilds its store from the log`,
    );
  }

  /** The chained digest at the position applied, as the store keeps it (see `#chain`). */
  #loadChain(): string | undefined {
    if (this.#applied === 0) return CHAIN_START;
    const record = this.#recentDb.get(this.#applied);
    return record && !Array.isArray(record) ? record.c : undefined;
  }

  /**
   * A majority of the nodes applied the log otherwise: no more writes (the queued ones fail),
   * nothing more applied, the store is marked diverged (a restart rebuilds it too), the others
   * are told (also which streams' subscribers may hold the other history: `#markUnsure`), and a
   * rebuild is scheduled.
   */
  #stopSelf(reason: string, hold?: Hold): void {
    const first = !this.#diverged && !this.#rebuilding;
    this.#opts.deafAfter = 0;
    this.#hold = hold;
    this.#diverged = reason;
    this.#rebuilding ??= reason;
    log.error(reason);
    const err = new StorageUnavailableError(reason);
    for (const t of this.#queue.splice(0)) t.reject(err);
    // From here on nothing more is applied (or published) from the log until the store is
    // replaced: what subscribers were sent of the other history is what `#markUnsure` names.
    clearTimeout(this.#repairTimer);
    this.#repairTimer = undefined;
    this.#buffer.clear();
    // Stopped again while rebuilding (the log was compacted meanwhile): the store already
    // holds the majority's history, and what the old one published is being told.
    const from = first
      ? Math.max(this.#peers.confirmedUpTo(), this.#claims.learned) + 1
      : undefined;
    if (from !== undefined) this.#confirmed = from - 1;
    this.#otherActive = (this.#opts.otherAt ?? 0) > 0;
    const report = from !== undefined ? newReport(this.#link.nodeId) : undefined;
    const streams = from !== undefined && report !== undefined
      ? this.#markUnsure(from, report)
      : undefined;
    const state = this.#rawDb<string | number>(POSITION_DB);
    void state.transaction(() => {
      state.put(DIVERGED_KEY, reason);
      if (from !== undefined) {
        state.put(UNSURE_FROM_KEY, from);
        state.put(CONFIRMED_KEY, from - 1);
        state.put(UNSURE_REPORT_KEY, report!);
      }
      if (streams) this.#unsure.keep(report!, streams);
    }).catch(() => {});
    this.#reportApplied();
    this.#scheduleRebuild();
  }

  /**
   * This node applied positions `from` on (up to the one applied) on another history than the
   * majority, and published their entries to its subscribers: every node is told which streams
   * under `report` (`unsure.ts`: the streams those positions wrote, with the first and last
   * position written in each; every stream when the positions kept in the store do not reach
   * back to `from`); returns the streams to list for the epoch renewal.
   */
  #markUnsure(from: number, report: string): StreamRanges {
    if (from <= this.#applied - CONFLICT_WINDOW) return this.#unsure.stopped(report, from, "all");
    const keys: [string, Key][] = [];
    for (
      const { value } of this.#recentDb.getRange({
        start: Math.max(1, from),
        end: this.#applied + 1,
      })
    ) {
      keys.push(...(Array.isArray(value) ? value : value.w));
    }
    return this.#unsure.stopped(report, from, rangesWritten(keys));
  }

  /** Whether this node stopped itself and has not yet rebuilt its store and been confirmed
   * (no writes, no snapshots, no read-your-writes answers meanwhile). */
  get stopped(): boolean {
    return this.#diverged !== undefined || this.#rebuilding !== undefined;
  }

  /** Resolves true once a majority of the nodes confirmed this node's history up to `seq`,
   * false after `ms` or when this node stopped itself. */
  async confirmed(seq: number, ms: number): Promise<boolean> {
    return !this.stopped && (await this.#peers.wait(seq, Date.now() + ms)) && !this.stopped;
  }

  /** Registers `fn`, called each time this node replaced its store (`#replace`), before
   * anything of the new store is applied: whatever it told clients from the old one is void
   * (the server closes its sockets, so clients rejoin and resume from the rebuilt store). */
  onRebuilt(fn: () => void): void {
    this.#onRebuilt.push(fn);
  }

  #scheduleRebuild(): void {
    if (this.#rebuildTimer || this.#closed) return;
    // Once held (looked at after the usual pause, found unchanged), what it depends on is
    // looked at every pause, no attempt counted: a change starts the rebuild at once, never
    // sooner than the usual pause after the last attempt.
    const base = this.#opts.rebuildPauseMs ?? 1000;
    const held = this.#hold?.logged === true;
    const pause = held
      ? base
      : Math.min(MAX_REBUILD_PAUSE_MS, base * 2 ** Math.min(this.#rebuildAttempts, 10));
    if (!held) this.#rebuildAttempts++;
    this.#rebuildTimer = setTimeout(() => {
      void this.#rebuild().finally(() => {
        this.#rebuildTimer = undefined;
        // Failed, or diverged again meanwhile: later.
        if (this.#diverged && !this.#closed) this.#scheduleRebuild();
      });
    }, pause);
  }

  /**
   * Replaces this node's store with one the majority agrees with (`rebuild.ts`), follows the
   * log from there, and once caught up with the log's tail and confirmed by a majority of the
   * nodes takes writes again.
   */
  async #rebuild(): Promise<void> {
    const reason = this.#diverged;
    if (!reason || this.#closed) return;
    if (this.#hold && (await this.#stillHeld())) return;
    if (!this.#diverged || this.#closed) return;
    log.warn("cluster node rebuilding its store", {
      applied: this.#applied,
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
      if (this.#closed || this.#diverged) return;
      if (this.#failing === BEHIND) {
        // Compacted past the position rebuilt from meanwhile: again, from the newer snapshot.
        this.#failing = undefined;
        return this.#stopSelf(
          "cluster unavailable: the log was compacted while this node rebuilt its store; it rebuilds again",
        );
      }
      const tail = await this.#tail().catch(() => undefined);
      if (tail === undefined) {
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!(await this.#waitApplied(tail, Date.now() + 5000))) continue;
      this.#rebuilding =
        `cluster unavailable: this node rebuilt its store and waits for a majority of the nodes to confirm its history (position ${tail})`;
      if (await this.#peers.wait(tail, Date.now() + 5000)) break;
    }
    if (this.#diverged || this.#closed) return;
    this.#rebuilding = undefined;
    this.#rebuildAttempts = 0;
    this.#rebuildRead = undefined;
    this.#lastAppend = Date.now();
    log.info("cluster node rebuilt its store and takes writes again", { position: this.#applied });
    void this.#unsure.renew();
  }

  /**
   * Swaps the store for the rebuild source in one local commit, with nothing applied
   * meanwhile, and resets what this node remembers of the old history; "closed" when it was
   * closed on the way, "refused" when the source or the log holds another history at a
   * position a majority confirmed (`#refused`: nothing is replaced).
   */
  async #replace(): Promise<"replaced" | "refused" | "closed"> {
    // Read first: anything that changes while the rebuild reads ends a later hold.
    this.#rebuildRead = await this.#readInputs();
    const { first } = await this.#link.bounds();
    const source = await rebuildSource(this.#link, first);
    try {
      if (await this.#refused(source)) return "refused";
      if (this.#closed) return "closed";
      this.#replacing = true;
      this.#consumer?.stop();
      this.#consumer = undefined;
      clearTimeout(this.#repairTimer);
      this.#repairTimer = undefined;
      while (this.#applying) await this.#applying;
      if (this.#closed) return "closed";
      this.#rebuilding =
        `cluster unavailable: this node is rebuilding its store from the log (it applied the log differently from a majority of the nodes)`;
      await replaceStore({
        root: this.root,
        db: (name) => this.#rawDb(name),
        keep: this.#localDbs,
        replaced: [POSITION_DB, "cluster:recent"],
      }, source);
      const was = this.#applied;
      this.#applied = source.position;
      [this.#recent, this.#print] = this.#loadHistory();
      this.#chain = this.#loadChain();
      this.#buffer.clear();
      // What the ordered logs derived from the old store (positions published, joins waiting
      // for one) is void: they start again from the new one, before anything is applied to it.
      this.#changes.replaced();
      // And whatever clients were told from it: before anything of the new store is published.
      for (const fn of this.#onRebuilt) {
        try {
          fn();
        } catch (err) {
          log.warn("cluster rebuild hook failed", { error: String(err) });
        }
      }
      this.#peers.reset(this.#applied);
      this.#claims.reset();
      // The fault hook plays one diverged replica once; the rebuild reads the leader again.
      this.#opts.forkAt = 0;
      this.#diverged = undefined;
      // The new store holds the log's history: nothing of the old one is left to keep.
      this.#confirmed = 0;
      log.info("cluster store replaced", { position: this.#applied, was });
    } finally {
      this.#replacing = false;
      await source.dispose();
    }
    if (this.#closed) return "closed";
    this.#lastApply = Date.now();
    this.#follow();
    this.#reportApplied();
    // The peers' latest reports judged now, up to the position rebuilt: a store rebuilt from a
    // snapshot at the log's tail applies nothing more until the next write (in an idle cluster
    // it would wait for a majority until then).
    this.#peers.applied(this.#applied);
    this.#scheduleRepair(this.#knownTail);
    return "replaced";
  }

  /** What a rebuild reads from NATS (`rebuild.ts` `rebuildInputs`) and the stream leader
   * elections heard so far (a leader that lost the stream and won it back between two looks
   * may hold other messages); undefined when it could not be read. */
  async #readInputs(): Promise<RebuildInputs | undefined> {
    const elections = this.#elections;
    const read = await rebuildInputs(this.#link).catch(() => undefined);
    return read === undefined
      ? undefined
      : { full: `${read.full} ${elections}`, refusal: `${read.refusal} ${elections}` };
  }

  /**
   * Whether the next rebuild is still held. A rebuild's outcome is a function of what it reads
   * from NATS (the stream leader's replica of the log, the log's bounds, the newest snapshot:
   * `#readInputs`) and, once its store is replaced, of the others' reports it is judged by (the
   * members and each one's latest position, fingerprint and diverged flag:
   * `PeerAgreement#inputs`). So once a store it rebuilt was found disagreeing with a majority,
   * rebuilding again while all of these are unchanged would replay the log into the same
   * disagreement (run G1, bench/results/2026-11-27-cluster-G1-every-node-stopped.md: node 2
   * replayed the whole log 14 times while the others, stopped, kept their reports); and once a
   * rebuild was refused (`#refused`), trying again while what it reads is unchanged would read the
   * log into the same refusal (the log growing aside: a refusal is about history a majority
   * confirmed, before the tail; a long nemesis run re-read 30,000 positions into the same refusal
   * three times while the log grew).
   * It is held (logged once) until one of them changes: a peer writes, rebuilds, restarts or
   * leaves, the stream gets another leader, the log grows (a disagreement only) or is
   * compacted, a snapshot is stored. A failed look counts as a change (the rebuild then tries,
   * as before). A restart rebuilds once anyway.
   */
  async #stillHeld(): Promise<boolean> {
    const hold = this.#hold!;
    // A refusal's hold (no peers judged it) is not ended by the log's tail growing.
    const read = (await this.#readInputs())?.[hold.peers === undefined ? "refusal" : "full"];
    const peers = hold.peers === undefined ? undefined : this.#peers.inputs();
    if (this.#hold !== hold) return true; // stopped again meanwhile: that stop decides
    if (read !== undefined && read === hold.read && peers === hold.peers) {
      if (hold.wanted !== undefined) wantSnapshot(this.#link, hold.wanted);
      if (!hold.logged) {
        hold.logged = true;
        log.warn(
          "cluster rebuild held: nothing it reads or is judged by has changed since its last attempt",
          {
            after: hold.peers === undefined ? "refused" : "disagreement",
            applied: this.#applied,
          },
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

  /**
   * Whether replacing the store by `source` (and the log after it) would discard history a
   * majority confirmed (`confirmed_guard.ts`): then the node stays stopped with the reason,
   * logged at error level and kept in the diverged mark, its store untouched for an operator;
   * it asks the other nodes for a snapshot reaching the confirmed position (`rebuild.ts`
   * `wantSnapshot`), and the rebuild is tried again after the usual pause (from that snapshot
   * once stored, which holds the confirmed history without the log; or a later stream leader
   * may hold it again).
   */
  async #refused(source: RebuildSource): Promise<boolean> {
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
      mine: kept(this.#recentDb as Database<unknown, Key>, this.#chainDb as Database<unknown, Key>),
      sourcePosition: source.position,
      source: source.store
        ? kept(source.store.db("cluster:recent"), source.store.db(CHAIN_DB))
        : { records: new Map(), checkpoints: new Map() },
      read: async (seq) => {
        const data = await this.#link.read(seq);
        if (!data) return undefined;
        const msg = this.#played(seq, codec.unpack(data) as LogMessage);
        return msg.a ?? msg.b;
      },
    });
    if (!mismatch) return false;
    // A snapshot reaching the confirmed position holds that history without the log: asked of
    // the others (each refusal), it changes what the next rebuild reads.
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
      // `snapshot_asked`: whether the others were asked for a snapshot reaching `confirmed`.
      log.error(reason, {
        confirmed: this.#confirmed,
        applied: this.#applied,
        batch: mismatch.mine,
        log_batch: mismatch.theirs ?? null,
        ...after,
        snapshot_asked: wanted !== undefined,
      });
    } else {log.warn("cluster rebuild refused again", {
        position: mismatch.seq,
        chained: mismatch.chained ?? false,
        attempt: this.#rebuildAttempts,
      });}
    this.#diverged = this.#rebuilding = reason;
    if (wanted !== undefined) wantSnapshot(this.#link, wanted);
    // Tried again once what it read changed (`#stillHeld`).
    this.#hold = this.#rebuildRead === undefined
      ? undefined
      : { read: this.#rebuildRead.refusal, logged: false, wanted };
    const state = this.#rawDb<string>(POSITION_DB);
    await state.put(DIVERGED_KEY, reason).catch(() => {});
    return true;
  }

  /** `msg` as this node reads it at `seq` (the fault hook `otherAt`: another message there). */
  #played(seq: number, msg: LogMessage): LogMessage {
    if (!this.#otherActive || seq !== this.#opts.otherAt) return msg;
    return { ...msg, o: "", b: `other-${seq}`, a: undefined, w: forkedWrites(msg.w) };
  }

  /** Log position applied here. */
  get applied(): number {
    return this.#applied;
  }

  /** What readiness needs to know, without asking anyone: the connection, how long ago this
   * node last had a batch found in the log and last applied, and how far behind the log's
   * last known position it is. */
  status(): {
    connected: boolean;
    appendAgeMs: number;
    applyAgeMs: number;
    lag: number;
    failing?: string;
  } {
    const now = Date.now();
    return {
      connected: this.#link.connected(),
      appendAgeMs: now - this.#lastAppend,
      applyAgeMs: now - this.#lastApply,
      lag: Math.max(0, this.#knownTail - this.#applied),
      failing: this.#failing,
    };
  }

  /** The write deadline in ms (a read waiting for a position waits at most this long). */
  get writeDeadlineMs(): number {
    return this.#opts.writeDeadlineMs;
  }

  /** Resolves true once log position `seq` is applied here, false after `ms`; never true while
   * this node stopped itself or rebuilds (its store may hold another history). */
  async caughtUp(seq: number, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (!this.stopped && this.#applied >= seq) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      if (this.stopped) await new Promise((r) => setTimeout(r, Math.min(left, 100)));
      else await this.#waitApplied(seq, Math.min(deadline, Date.now() + 250));
    }
  }

  /**
   * Starts following the log and resolves once this node has applied everything the log held
   * when it was called (or rejects after `waitMs`).
   */
  async start(waitMs = 60_000): Promise<void> {
    // Stopped as diverged before a restart (or a crash during a rebuild): rebuilt first.
    const marked = this.#rawDb<string>(POSITION_DB).get(DIVERGED_KEY);
    let refused = false;
    if (marked) {
      this.#diverged = this.#rebuilding = String(marked);
      log.warn("cluster store marked diverged; rebuilding it before serving", {
        reason: String(marked),
      });
      const position = this.#rawDb<number>(POSITION_DB);
      const from = position.get(UNSURE_FROM_KEY) ?? 1;
      // A store marked by an earlier version kept only the first unsure position.
      this.#confirmed = position.get(CONFIRMED_KEY) ?? from - 1;
      this.#otherActive = (this.#opts.otherAt ?? 0) > 0;
      // Its subscribers may have moved to other nodes meanwhile: they are told again, under the
      // same report (and the streams listed for the epoch renewal, for a store marked by an
      // earlier version).
      const state = this.#rawDb<string>(POSITION_DB);
      const report = state.get(UNSURE_REPORT_KEY) ?? newReport(this.#link.nodeId);
      const streams = this.#markUnsure(from, report);
      await state.transaction(() => {
        state.put(UNSURE_REPORT_KEY, report);
        this.#unsure.keep(report, streams);
      });
      // A failed attempt (a read of the log or of the snapshot that failed: its NATS server
      // refuses JetStream requests, a leader election) is tried again later like a refused one,
      // not thrown: the process would exit, and restart into the same failure.
      const outcome = await this.#replace().catch((err) => {
        log.warn("cluster rebuild failed; trying again later", { error: String(err) });
        return "failed" as const;
      });
      if (outcome === "closed") throw new Error("closed while rebuilding the store");
      // Refused or failed: the node serves stopped (503) and tries again later, as after a stop.
      refused = outcome !== "replaced";
      if (!refused) this.#rebuilding = undefined;
    }
    if (!refused) this.#follow();
    // A dropped or delayed last message shows no gap: writers announce each position they
    // found their batch at (read from the stream after a short grace), and the log's tail is
    // compared now and then in case an announcement was lost too.
    this.#unsubscribeTail = this.#link.subscribe(HEAD_SUBJECT, (data) => {
      const seq = decodeSeq(data);
      if (!(seq > 0) || (this.#opts.dropRate > 0 && Math.random() < this.#opts.dropRate)) return;
      this.#knownTail = Math.max(this.#knownTail, seq);
      if (seq > this.#applied) this.#scheduleRepair(seq);
    });
    this.#unsubscribeUnsure = this.#link.subscribe(
      UNSURE_SUBJECT,
      (data) => this.#unsure.heard(data),
    );
    this.#unsubscribeElections = this.#link.subscribe(
      ELECTED_SUBJECT,
      () => void this.#elections++,
    );
    this.#unsubscribeApplied = this.#link.subscribe(APPLIED_SUBJECT, (data) => {
      try {
        const { n, q, h, d } = codec.unpack(data) as { n: string; q: number; h: string; d?: 1 };
        if (this.#opts.deafAfter && q > this.#opts.deafAfter) return;
        this.#peers.report(n, q, h, d === 1);
      } catch { /* not a report */ }
    });
    this.#tailTimer = setInterval(() => void this.#checkTail(), 1000);
    if (refused) {
      this.#reportApplied();
      this.#scheduleRebuild();
      return;
    }
    const { first, last: target } = await this.#link.bounds();
    if (first > this.#applied + 1) throw new Error(BEHIND);
    if (!(await this.#waitApplied(target, Date.now() + waitMs))) {
      throw new Error(`cluster catch-up to log position ${target} did not finish in ${waitMs} ms`);
    }
    // Streams named unsure and not yet given a new epoch (by this node rebuilt just now, or
    // heard from another before a crash or a restart).
    void this.#unsure.renew();
  }

  /** (Re)starts the log consumer after the position applied. */
  #follow(): void {
    this.#consumer?.stop();
    this.#consumerSeq = this.#applied;
    this.#consumerBehind = 0;
    // Its deliveries only say that a position exists: the consumer lives on any of the stream's
    // replicas, and a replica may have diverged (nats-server 2.9.10, docs/cluster-internals.md), so
    // the content is read from the stream's leader, alike for every node.
    this.#consumer = this.#link.follow(this.#applied + 1, (seq) => {
      this.#consumerSeq = seq;
      if (this.#opts.dropRate > 0 && Math.random() < this.#opts.dropRate) return;
      this.#knownTail = Math.max(this.#knownTail, seq);
      if (seq > this.#applied) this.#scheduleRepair(seq);
    });
  }

  /** The table as products see it: the running job's reads and writes recorded, served from
   * a snapshot run's overlay during one (`ReplicatedTable`). */
  db<V = unknown>(name: string): Table<V> {
    let table = this.#tables.get(name);
    if (!table) {
      table = new ReplicatedTable(name, this.#rawDb(name), this.#job);
      this.#tables.set(name, table);
    }
    return table as ReplicatedTable<V>;
  }

  /** Declares `name` node-local (see the module comment and `Storage.nodeLocal`) and records
   * it for snapshots; then opens it like `db`. */
  nodeLocal<V = unknown>(name: string): Table<V> {
    if (!this.#localDbs.has(name)) {
      this.#localDbs.add(name);
      // Restored from a snapshot without the list: the rows there are another node's.
      if (this.#state.get(UNLISTED_NODE_LOCAL)) this.#rawDb(name).clearSync();
      this.#rawDb<true>(NODE_LOCAL_DB).putSync(name, true);
    }
    return this.db<V>(name);
  }

  /** Where the cluster's members come from (acknowledgements wait for a majority of them). */
  useMembers(members: () => string[]): void {
    this.#peers.useMembers(members);
  }

  /** Other nodes' changes to the ordered logs, told as this node applies them. */
  get remote(): RemoteChanges {
    return this.#changes;
  }

  /** The LMDB environment's root (speculation and apply run their transactions on it). */
  get root(): RootDatabase {
    return this.#local.root;
  }

  /** Readiness, from what this node knows (no request to anyone): connected to NATS, no
   * write waiting longer than the deadline without any batch reaching the log, no log position
   * known and left unapplied for longer than the deadline, no failing apply or compaction. */
  unavailable(): string | undefined {
    if (this.#closed) return "storage unavailable: server shutting down";
    if (this.#diverged) return this.#diverged;
    if (this.#rebuilding) return this.#rebuilding;
    if (!this.#link.connected()) return "cluster unavailable: not connected to NATS";
    if (this.#failing) return this.#failing;
    const { appendAgeMs, applyAgeMs, lag } = this.status();
    const deadline = this.#opts.writeDeadlineMs;
    if (this.#inflight.size > 0 && appendAgeMs > deadline) {
      return `cluster unavailable: no write reached the log for ${appendAgeMs} ms`;
    }
    if (lag > 0 && applyAgeMs > deadline) {
      return `cluster unavailable: ${lag} log positions behind, nothing applied for ${applyAgeMs} ms`;
    }
    return undefined;
  }

  /** See the module comment: resolves with `fn`'s result once its writes are applied here
   * (and notes their position for the HTTP request being answered, `read_your_writes.ts`). */
  transaction<T>(fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StorageUnavailableError("server shutting down"));
    const stopped = this.#diverged ?? this.#rebuilding;
    if (stopped) return Promise.reject(new StorageUnavailableError(stopped));
    const deadline = Date.now() + this.#opts.writeDeadlineMs;
    const request = requestPositions.getStore();
    const position = request &&
      ((seq: number) => void (request.position = Math.max(request.position, seq)));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        fn,
        deadline,
        position,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
      this.#pump();
    });
  }

  /** Shutdown, step one (see `StoreEnv.drain`). */
  drain(): Promise<void> {
    return this.#local.drain();
  }

  /** Resolves once every write issued so far is on disk. */
  flushed(): Promise<void> {
    return this.#local.flushed();
  }

  /** Writes a consistent copy of the store to `path` (a snapshot, `snapshots.ts`). */
  backup(path: string): Promise<void> {
    return this.#local.backup(path);
  }

  /** Stops following the log once the writes out have settled, then closes the store. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#pumpTimer);
    clearTimeout(this.#rebuildTimer);
    this.#expireQueued(Infinity);
    while (this.#inflight.size > 0 || this.#applying || this.#replacing) {
      await new Promise((r) => setTimeout(r, 5));
    }
    this.#consumer?.stop();
    this.#unsubscribeTail?.();
    this.#unsubscribeApplied?.();
    this.#unsubscribeElections?.();
    this.#unsubscribeUnsure?.();
    this.#unsure.close();
    clearInterval(this.#tailTimer);
    clearTimeout(this.#repairTimer);
    await this.#local.close();
  }

  #rawDb<V>(name: string): Database<V, Key> {
    let db = this.#raw.get(name);
    if (!db) {
      db = this.#local.db(name);
      this.#raw.set(name, db);
    }
    return db as Database<V, Key>;
  }

  /**
   * Sends queued writes out as batches: at once when no batch is out (the writes queued
   * meanwhile go together as the next one: group commit), beside the ones out when they have
   * waited `SLOW_BATCH_MS` (a lost reply or a stalled log must not hold every other write).
   * Queued writes whose deadline passed fail with 503.
   */
  #pump(): void {
    clearTimeout(this.#pumpTimer);
    this.#pumpTimer = undefined;
    if (this.#closed) return;
    const now = Date.now();
    this.#expireQueued(now);
    while (this.#queue.length > 0) {
      let oldest = Infinity;
      for (const b of this.#inflight) oldest = Math.min(oldest, b.since);
      if (
        this.#inflight.size >= MAX_INFLIGHT ||
        (this.#inflight.size > 0 && now - oldest < SLOW_BATCH_MS)
      ) {
        let due = this.#inflight.size >= MAX_INFLIGHT ? now + 100 : oldest + SLOW_BATCH_MS;
        for (const t of this.#queue) due = Math.min(due, t.deadline);
        this.#pumpTimer = setTimeout(() => this.#pump(), Math.max(1, due - now));
        return;
      }
      const tasks = this.#queue.splice(0, MAX_BATCH);
      const out = { since: now };
      this.#inflight.add(out);
      // A task must never be left unsettled (its request would hang): an unexpected error
      // fails the batch's unsettled tasks (settled ones ignore it) with 503.
      void this.#commit(tasks, out).catch((err) => {
        log.error("cluster write failed", { error: String(err) });
        const failure = new StorageUnavailableError(`cluster write failed (${String(err)})`);
        for (const t of tasks) t.reject(failure);
      }).finally(() => {
        this.#inflight.delete(out);
        this.#pump();
      });
    }
  }

  /** Fails the queued writes whose deadline is before `now` with 503. */
  #expireQueued(now: number): void {
    if (!this.#queue.some((t) => t.deadline <= now)) return;
    const reason = this.#closed
      ? "server shutting down"
      : `cluster write deadline passed (${this.#failing ?? "queued behind a stalled log"})`;
    const err = new StorageUnavailableError(reason);
    for (const t of this.#queue) if (t.deadline <= now) t.reject(err);
    this.#queue = this.#queue.filter((t) => t.deadline > now);
  }

  /**
   * Runs `tasks` speculatively, one after the other against the state at the position applied
   * (`base`), each seeing the writes of the ones before it and its own; records what they read
   * and write; undoes their writes. Drops a task that throws (see `#fail`) and runs the rest
   * again.
   *
   * The run reads an LMDB read snapshot with the writes kept in memory over it (`overlay.ts`),
   * so it never takes LMDB's write lock: a synchronous write transaction (aborted afterwards)
   * waited here while lmdb-js's write thread committed, which held the event loop 100-300 ms
   * at a time on a loaded machine. A run that calls something the overlay cannot serve exactly
   * goes again in such a write transaction (the way it always ran before).
   */
  #speculate(tasks: Task[]): { base: number; tasks: Task[]; reads: ReadSet } {
    let locked = false;
    for (;;) {
      let failed: { task: Task; error: unknown } | undefined;
      let base = 0;
      const reads = emptyReads();
      const run = (txn?: Transaction) => {
        base =
          (txn ? this.#state.get("applied", { transaction: txn }) : this.#state.get("applied")) ??
            0;
        for (const task of tasks) {
          this.#recording = [];
          try {
            task.result = task.fn();
          } catch (error) {
            failed = { task, error };
            return;
          }
          task.writes = this.#recording;
        }
      };
      let spec: SnapshotRun | undefined;
      this.#reading = reads;
      const t0 = performance.now();
      try {
        if (locked) {
          this.root.transactionSync(() => {
            run();
            throw ABORT;
          });
        } else {
          const txn = this.root.useReadTransaction();
          spec = this.#spec = { overlay: new WriteOverlay(), txn, views: new Map(), live: true };
          try {
            run(txn);
          } finally {
            spec.live = false;
            txn.done();
          }
        }
      } catch (err) {
        if (err !== ABORT) throw err;
      } finally {
        this.#spec = null;
        this.#recording = null;
        this.#reading = null;
      }
      const took = performance.now() - t0;
      if (took >= 50) {
        log.warn("cluster speculation held the thread", {
          ms: Math.round(took),
          tasks: tasks.length,
          locked,
        });
      }
      if (spec?.unsupported !== undefined) {
        if (!this.#unsupportedSeen.has(spec.unsupported)) {
          this.#unsupportedSeen.add(spec.unsupported);
          log.warn("cluster speculation runs in a write transaction", { call: spec.unsupported });
        }
        locked = true;
        continue;
      }
      if (!failed) return { base, tasks, reads };
      this.#fail(failed.task, failed.error, base);
      tasks = tasks.filter((t) => t !== failed!.task);
    }
  }

  /** Runs `tasks` until their batch is applied from the log (resolving them) or their
   * deadline passes (503); `out.since` is reset at each new append (see `#pump`). */
  async #commit(tasks: Task[], out: { since: number }): Promise<void> {
    let lastError = "log did not settle";
    for (;;) {
      // Speculate only with no apply pending: one may start between the end of the awaited one
      // and this continuation. A catch-up (a node resumed after a freeze) applies for seconds:
      // the wait ends at the batch's deadline (in the long nemesis, writes that waited out a
      // catch-up were answered 1.4 s past it).
      while (this.#applying) {
        const left = Math.min(...tasks.map((t) => t.deadline)) - Date.now();
        if (left <= 0) return this.#missedDeadline(tasks, lastError);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([this.#applying, new Promise((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
      const stopped = this.#diverged ?? this.#rebuilding;
      if (stopped) {
        for (const t of tasks) t.reject(new StorageUnavailableError(stopped));
        return;
      }
      let spec: { base: number; tasks: Task[]; reads: ReadSet };
      try {
        spec = this.#speculate(tasks);
      } catch (err) {
        for (const t of tasks) t.reject(err);
        return;
      }
      tasks = spec.tasks;
      if (tasks.length === 0) return;
      const deadline = Math.min(...tasks.map((t) => t.deadline));
      const writes = tasks.flatMap((t) => t.writes!);
      if (writes.every((w) => this.#localDbs.has(w[1]))) {
        try {
          await this.#local.transaction(() => this.#write(writes, true));
          for (const t of tasks) t.resolve(t.result);
        } catch (err) {
          for (const t of tasks) t.reject(err);
        }
        return;
      }
      const batch = crypto.randomUUID();
      const message: LogMessage = {
        o: this.#link.nodeId,
        b: batch,
        base: spec.base,
        r: spec.reads,
        w: writes,
        h: this.#print.at(spec.base),
      };
      // Packed once: a write to a long list carries the list's whole value.
      const data = codec.pack(message);
      if (data.byteLength > this.#link.maxPayload && tasks.length > 1) {
        const half = Math.ceil(tasks.length / 2);
        await Promise.all([
          this.#commit(tasks.slice(0, half), out),
          this.#commit(tasks.slice(half), out),
        ]);
        return;
      }
      out.since = Date.now();
      const outcome: Outcome = { done: null, seq: 0 };
      this.#awaiting.set(batch, outcome);
      lastError = await this.#append(message, data, outcome, deadline) ?? lastError;
      // From here on an apply treats the batch as another node's (its hooks publish it); one
      // already running counts it as ours and sets the outcome: let that one finish (that one
      // commit, not the catch-up it may be part of: that ran on past the deadline).
      this.#awaiting.delete(batch);
      if (this.#applyingRun) await this.#applyingRun.catch(() => {});
      // Applied here: acknowledged once enough other nodes applied the log alike that far. The
      // others read the position from the stream; this only tells them it exists. Meanwhile the
      // next batch may go out (it runs on state that includes this one).
      if (outcome.done === "applied") {
        this.#link.publish(HEAD_SUBJECT, encodeSeq(outcome.seq));
        this.#inflight.delete(out);
        this.#pump();
      }
      // A node that stopped itself meanwhile (also on a claim, `#onVerdict`) acknowledges nothing.
      if (
        outcome.done === "applied" &&
        (!(await this.#peers.wait(outcome.seq, deadline)) || this.#diverged !== undefined)
      ) {
        lastError = this.#diverged ?? "no majority of the nodes confirmed the log position";
        outcome.done = null;
      }
      if (outcome.done === "applied") {
        this.#failing = undefined;
        this.#lastAppend = Date.now();
        for (const t of tasks) {
          t.position?.(outcome.seq);
          t.resolve(t.result);
        }
        return;
      }
      if (outcome.done === null) {
        if (this.#closed) lastError = "server shutting down";
        else if (Date.now() - this.#lastAppend >= this.#opts.writeDeadlineMs) {
          this.#failing = `cluster unavailable: ${lastError}`;
        }
        return this.#missedDeadline(tasks, lastError);
      }
      // Stale (it read a key another write changed first): run it again on fresh state.
    }
  }

  /** Fails `tasks` with 503: their deadline passed, `lastError` being why. */
  #missedDeadline(tasks: Task[], lastError: string): void {
    log.warn("cluster write deadline passed", { reason: lastError });
    const err = new StorageUnavailableError(`cluster write deadline passed (${lastError})`);
    for (const t of tasks) t.reject(err);
  }

  /**
   * Publishes `message`, packed as `data` (message id `batch`), until the log, as read from
   * the stream, holds it (`outcome` set by `#apply`) or `deadline` passes. A publish without a
   * reply is retried with the same message id (JetStream stores it once); a reply's position is
   * only where to read: once applied that far without finding the batch, it is published
   * again. Returns the last error seen, if any.
   */
  async #append(
    message: LogMessage,
    data: Uint8Array,
    outcome: Outcome,
    deadline: number,
  ): Promise<string | undefined> {
    const batch = message.b;
    let lastError: string | undefined;
    while (outcome.done === null && !this.#closed && !this.#diverged) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const r = await this.#link.append(data, message.b, Math.min(PUBLISH_TRY_MS, left));
      if (outcome.done !== null) break;
      if (r.kind === "unknown") {
        lastError = r.error;
        // A server that does not answer at all is left for another one from `--nats`.
        this.#link.suspect();
        await new Promise((res) => setTimeout(res, 50));
        continue;
      }
      this.#knownTail = Math.max(this.#knownTail, r.seq);
      // Read the log up to the reply's position (the consumer or, failing that, direct reads).
      await this.#waitApplied(r.seq, deadline, outcome);
      if (outcome.done !== null || this.#applied < r.seq) continue;
      lastError = `the log holds another message at position ${r.seq}`;
      log.warn("cluster publish reply names a position holding another message", {
        position: r.seq,
        batch,
      });
      // A duplicate pointing at another message: the leader's duplicate table disagrees with its
      // log (a replica that diverged, nats-server 2.9.10), and would answer every retry alike
      // for its whole window. Publish under a new message id, naming the batch's first id: the
      // apply counts both as one batch, whichever it meets first.
      if (r.duplicate) {
        message = { ...message, b: crypto.randomUUID(), a: batch };
        data = codec.pack(message);
        continue;
      }
      await new Promise((res) => setTimeout(res, 50));
    }
    return lastError;
  }

  /**
   * A transaction that threw (a 404, a 409) may have read state this node has not caught up
   * with (another node's write on its way): before the error stands, this node catches up
   * with the log's tail and runs the task once more, so a failure is as current as a success
   * (which the conflict check keeps current).
   */
  #fail(task: Task, error: unknown, base: number): void {
    if (task.checked) return task.reject(error);
    task.checked = true;
    void (async () => {
      try {
        const tail = await this.#tail();
        if (tail <= base) return task.reject(error);
        if (!(await this.#waitApplied(tail, task.deadline))) return task.reject(error);
      } catch {
        return task.reject(error);
      }
      if (this.#closed) return task.reject(error);
      this.#queue.push(task);
      this.#pump();
    })();
  }

  /** The log's last position; concurrent callers share one request. */
  #tail(): Promise<number> {
    this.#tailRequest ??= this.#link.lastSeq().finally(() => (this.#tailRequest = undefined));
    return this.#tailRequest;
  }

  /** Writes a write set to the raw databases (inside a transaction). */
  #write(writes: Write[], mine: boolean): void {
    for (const w of writes) {
      if (!mine && this.#localDbs.has(w[1])) continue;
      const db = this.#rawDb(w[1]);
      if (w[0] === 0) db.put(w[2], w[3]);
      else db.remove(w[2]);
    }
  }

  #feed(seq: number, data: Uint8Array): void {
    if (this.#replacing || this.#diverged) return;
    if (seq <= this.#applied || this.#buffer.has(seq)) return;
    this.#buffer.set(seq, data);
    void this.#drain();
  }

  async #drain(): Promise<void> {
    if (this.#applying || this.#replacing) return;
    let done!: () => void;
    this.#applying = new Promise((r) => (done = r));
    try {
      while (this.#buffer.has(this.#applied + 1) && !this.#diverged) {
        const run: { seq: number; msg: LogMessage }[] = [];
        let bytes = 0;
        const t0 = performance.now();
        for (
          let s = this.#applied + 1;
          this.#buffer.has(s) && run.length < MAX_APPLY && bytes < MAX_APPLY_BYTES &&
          performance.now() - t0 < MAX_APPLY_DECODE_MS;
          s++
        ) {
          const data = this.#buffer.get(s)!;
          bytes += data.byteLength;
          run.push({ seq: s, msg: codec.unpack(data) as LogMessage });
        }
        try {
          this.#applyingRun = this.#apply(run);
          await this.#applyingRun;
        } catch (err) {
          this.#failing = err instanceof StorageUnavailableError ? err.reason : String(err);
          log.error("cluster apply failed; retrying", { error: String(err) });
          if (this.#closed) break;
          await new Promise((r) => setTimeout(r, 500));
          continue;
        } finally {
          this.#applyingRun = undefined;
        }
        for (const { seq } of run) this.#buffer.delete(seq);
        // More to apply: let timers and requests run first (the position applied is already
        // recorded, so nothing waits on a half-applied run).
        if (this.#buffer.has(this.#applied + 1)) await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      this.#applying = undefined;
      done();
    }
    if (this.#buffer.size > 0) this.#scheduleRepair();
  }

  /** Tells the other nodes the fingerprint at the position applied (`agreement.ts`). */
  #reportApplied(): void {
    const report = {
      n: this.#link.nodeId,
      q: this.#applied,
      h: this.#print.at(this.#applied),
      ...(this.#diverged ? { d: 1 } : {}),
    };
    this.#link.publish(APPLIED_SUBJECT, codec.pack(report));
  }

  /** Applies consecutive log messages in one local commit (skipping stale write sets), then
   * tells the hooks. */
  async #apply(run: { seq: number; msg: LogMessage }[]): Promise<void> {
    const me = this.#link.nodeId;
    const own = new Map<LogMessage, Outcome>();
    const fresh: { seq: number; msg: LogMessage }[] = [];
    const written: [number, [string, Key][], string, string | undefined][] = [];
    const before = this.#applied;
    const chainBefore = this.#chain;
    for (const item of run) {
      if (item.seq === this.#opts.forkAt) {
        item.msg = {
          ...item.msg,
          o: "",
          b: `fork-${item.seq}`,
          a: undefined,
          w: forkedWrites(item.msg.w),
        };
      }
      item.msg = this.#played(item.seq, item.msg);
      const { seq, msg } = item;
      // A batch id seen again (a retried publish stored twice) is skipped: its first
      // occurrence decided it.
      const id = msg.a ?? msg.b;
      const repeat = this.#recent.repeated(id);
      const outcome = msg.o === me && !repeat ? this.#awaiting.get(id) : undefined;
      if (outcome) own.set(msg, outcome);
      // A write set speculated on another history (its writer's fingerprint at `base` is not
      // ours) is skipped like a conflicting one, by every node that shares our history.
      const known = msg.h === undefined ? undefined : this.#print.at(msg.base);
      const forked = known !== undefined && known !== msg.h;
      const stale = repeat || forked || this.#recent.stale(msg.base, seq, msg.r);
      const keys: [string, Key][] = stale
        ? []
        : msg.w.filter((w) => !this.#localDbs.has(w[1])).map((w) => [w[1], w[2]]);
      this.#recent.record(seq, keys, id);
      this.#print.add(seq, positionDigest(id, !stale));
      if (this.#chain !== undefined) this.#chain = chainDigest(this.#chain, seq, id);
      written.push([seq, keys, id, this.#chain]);
      if (!stale) fresh.push(item);
      if (outcome) {
        outcome.done = stale ? "stale" : null;
        outcome.seq = seq;
      }
    }
    const remote = fresh.filter(({ msg }) => !own.has(msg)).flatMap(({ msg }) => msg.w);
    this.#changes.applying(remote);
    const last = run[run.length - 1].seq;
    try {
      // One batch of lmdb-js's write thread: this thread only encodes the puts and removes into
      // its queue; the write thread takes the write lock, writes them all in one transaction
      // (all or nothing), commits and flushes, so this thread never waits for the lock, the
      // disk, or LMDB's pages. A synchronous commit waited for all three (50-150 ms per apply
      // on a loaded machine; a catch-up, a long series of them, held the event loop for
      // seconds), and an asynchronous transaction's callback still wrote the pages here, on
      // this thread, while the write thread held the lock (up to 171 ms for one position under
      // disk load). No speculation runs while this is pending (`#commit`).
      const t0 = performance.now();
      let held = 0;
      await this.root.batch(() => {
        const c0 = performance.now();
        for (const { msg } of fresh) this.#write(msg.w, msg.o === me);
        for (const [seq, keys, batch, chain] of written) {
          this.#recentDb.put(
            seq,
            chain === undefined ? { w: keys, b: batch } : { w: keys, b: batch, c: chain },
          );
          if (chain !== undefined && seq % CHAIN_CHECKPOINT_EVERY === 0) {
            this.#chainDb.put(seq, chain);
          }
          if (seq - CONFLICT_WINDOW > 0) this.#recentDb.remove(seq - CONFLICT_WINDOW);
        }
        this.#state.put("applied", last);
        held = performance.now() - c0;
      });
      const took = performance.now() - t0;
      // The encoding runs on this thread (requests, `/readyz`, wait meanwhile).
      if (held >= 50) {
        log.warn("cluster apply held the thread", { ms: Math.round(held), positions: run.length });
      }
      if (took >= 2000) {
        log.warn("cluster apply commit slow", { ms: Math.round(took), positions: run.length });
      }
    } catch (caught) {
      const err = await asStorageError(caught, this.#path);
      this.#recent.rollback(before);
      this.#print.rollback(before);
      this.#chain = chainBefore;
      for (const o of own.values()) o.done = null;
      this.#changes.applied(remote, false);
      throw err;
    }
    this.#applied = last;
    this.#lastApply = Date.now();
    this.#knownTail = Math.max(this.#knownTail, last);
    this.#reportApplied();
    this.#peers.applied(last);
    for (const verdict of this.#claims.reached()) this.#onVerdict(verdict);
    for (const [msg, o] of own) {
      if (o.done === null && fresh.some((f) => f.msg === msg)) o.done = "applied";
    }
    this.#changes.applied(remote, true);
    const due: Waiter[] = [];
    const waiting: Waiter[] = [];
    for (const w of this.#appliedWaiters) {
      (w.seq <= last || (w.outcome && w.outcome.done !== null) ? due : waiting).push(w);
    }
    this.#appliedWaiters = waiting;
    for (const w of due) w.wake();
  }

  /** Resolves true once position `seq` is applied here (or `outcome` is decided), false at
   * `deadline`. Fetches missing messages from the stream when they do not arrive on their own. */
  #waitApplied(seq: number, deadline: number, outcome?: Outcome): Promise<boolean> {
    if (this.#applied >= seq || (outcome && outcome.done !== null)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#appliedWaiters = this.#appliedWaiters.filter((w) => w !== waiter);
        resolve(false);
      }, Math.max(0, deadline - Date.now()));
      const waiter = {
        seq,
        outcome,
        wake: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.#appliedWaiters.push(waiter);
      this.#scheduleRepair(seq);
    });
  }

  /** Reads the positions after the one applied, up to the highest known to exist (`upTo`, a
   * waiter's, a buffered one's), from the stream's leader, `READ_AHEAD` at a time. */
  #scheduleRepair(upTo = 0): void {
    this.#repairTarget = Math.max(this.#repairTarget, upTo);
    if (this.#repairTimer || this.#closed || this.#replacing || this.#diverged) return;
    const pause = Date.now() - this.#repairFailedAt < 1000 ? 250 : this.#repairEmpty ? 20 : 0;
    this.#repairTimer = setTimeout(async () => {
      let want = this.#repairTarget;
      for (const w of this.#appliedWaiters) want = Math.max(want, w.seq);
      for (const s of this.#buffer.keys()) want = Math.max(want, s);
      this.#repairEmpty = false;
      try {
        for (
          let from = this.#applied + 1;
          from <= want && !this.#closed && !this.#repairEmpty;
          from += READ_AHEAD
        ) {
          const seqs: number[] = [];
          for (let s = from; s <= Math.min(want, from + READ_AHEAD - 1); s++) {
            if (!this.#buffer.has(s) && s > this.#applied) seqs.push(s);
          }
          const read = await Promise.all(seqs.map((s) => this.#link.read(s)));
          for (const [i, data] of read.entries()) {
            if (!data) {
              this.#repairEmpty = true; // not stored yet (a hint ahead of the leader)
              break;
            }
            this.#feed(seqs[i], data);
          }
        }
        this.#readsFailingSince = 0;
      } catch (err) {
        // Logged once a second at most, and retried after a pause (no stream leader yet).
        const now = Date.now();
        if (now - this.#repairFailedAt > 1000) {
          log.warn("cluster repair read failed", { error: String(err) });
        }
        this.#repairFailedAt = now;
        // A server that answers pings but whose JetStream requests keep failing is left for
        // another one (in a nemesis run a node stayed on such a server for minutes, every read
        // timing out, while the other nodes went on), once the log is seen growing meanwhile
        // (announcements of other nodes' writes, this node's stored publishes): else JetStream
        // itself is electing, every server fails alike, and a move would only cost a dial (a
        // move then dialled the frozen old leader first: 2 s more).
        if (this.#readsFailingSince === 0) {
          this.#readsFailingSince = now;
          this.#tailWhenFailing = this.#knownTail;
        } else if (this.#link.connected()) {
          const failing = now - this.#readsFailingSince;
          const refused = /\(10008\)/.test(String(err));
          const grows = this.#knownTail > this.#tailWhenFailing;
          const due = grows ? READS_FAILING_MS : READS_STUCK_MS;
          if (!refused && failing >= due) {
            this.#readsFailingSince = now;
            this.#tailWhenFailing = this.#knownTail;
            this.#link.moveOn("cluster reads keep failing on this NATS server; moving to another", {
              error: String(err),
              failing_ms: failing,
              log_grew: grows,
            });
          }
        }
      }
      this.#repairTimer = undefined;
      if (this.#applied >= this.#repairTarget) this.#repairTarget = 0;
      if (
        this.#appliedWaiters.length > 0 || this.#buffer.size > 0 ||
        this.#repairTarget > this.#applied
      ) {
        this.#scheduleRepair();
      }
    }, pause);
  }

  async #checkTail(): Promise<void> {
    if (this.#closed || !this.#link.connected()) return;
    try {
      const { first, last } = await this.#link.bounds();
      this.#knownTail = Math.max(this.#knownTail, last);
      // A consumer left behind the position applied for 3 checks in a row is re-created.
      this.#consumerBehind = this.#consumerSeq < this.#applied ? this.#consumerBehind + 1 : 0;
      if (this.#consumerBehind >= 3 && !this.#closed) {
        log.warn("cluster log consumer behind; re-creating it", {
          consumer: this.#consumerSeq,
          applied: this.#applied,
        });
        this.#follow();
      }
      if (first > this.#applied + 1 && this.#failing !== BEHIND) {
        this.#failing = BEHIND;
        log.error(BEHIND, { applied: this.#applied, log_first: first });
      }
      if (last > this.#applied) this.#scheduleRepair(last);
    } catch { /* the next check tries again */ }
  }
}
