/**
 * The state the parts of the replicated store share (`propose.ts`, `apply.ts`, and the defence,
 * `../divergence/`; `replicated_env.ts` is their facade): the local LMDB environment and its
 * cluster databases, the position applied with its recent writes, the
 * writes queued and out, the log buffered, the link, and whether the node stopped itself.
 */
import type { Database, Key } from "lmdb";
import { Packr } from "msgpackr";
import { StoreEnv } from "../../store/env.ts";
import { type ReadSet, RecentWrites } from "../conflicts.ts";
import { LogChangeFeed, type Write } from "../log_changes.ts";
import type { ClusterLink } from "../link.ts";
import type { RunningJob, SnapshotRun } from "../replicated_table.ts";

/** The cluster's databases: the position applied (key `applied`); the node-local databases
 * declared (`nodeLocal`: one node's rows, cleared in a store restored from another's snapshot,
 * `snapshots.ts`); each recent position's keys, batch id and chained digest; the chained digest
 * every `CHAIN_CHECKPOINT_EVERY` positions, for good. */
export const POSITION_DB = "cluster:state";
export const NODE_LOCAL_DB = "cluster:node-local";
export const RECENT_DB = "cluster:recent";
export const CHAIN_DB = "cluster:chain";
/** The key of `POSITION_DB` set in a store restored from a snapshot that listed no node-local
 * databases: each one declared is then emptied first (`readyRestored` in `snapshots.ts`). */
export const UNLISTED_NODE_LOCAL = "unlisted-node-local";
/** Not applied from other nodes' messages (the first two the apply keeps alike itself). */
const CLUSTER_LOCAL_DBS = [POSITION_DB, RECENT_DB, NODE_LOCAL_DB];

/** Positions a write set's `base` may lag behind the position it lands at before it counts as
 * stale whatever it read (the window of written keys every node keeps). */
export const CONFLICT_WINDOW = 4096;

/** Why a node cannot go on (see `snapshots.ts`: a restart restores the newest snapshot). */
export const BEHIND =
  "cluster unavailable: the log was compacted past this node's position; restart the node";
/** Core NATS subjects: a writer's announcement of the position it found its batch at (a hint:
 * the others read it from the stream), each node's fingerprint where it is (`../divergence/`). */
export const HEAD_SUBJECT = "sb.head";
export const APPLIED_SUBJECT = "sb.applied";

export const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** One log message: the writing node, its message id, the position its reads saw, what it read
 * and its write set, the writer's fingerprint at `base` (absent from older nodes), and, for a
 * batch published again under a new message id, its first id (`a`: both count as one batch). */
export interface LogMessage {
  o: string;
  b: string;
  a?: string;
  base: number;
  r: ReadSet;
  w: Write[];
  h?: string;
}

/** A recent position's record in `RECENT_DB` (older stores kept the keys alone). */
export type RecentRecord = [string, Key][] | { w: [string, Key][]; b?: string; c?: string };

/** How a batch written here ended when the log reached it, and at which position. */
export interface Outcome {
  done: "applied" | "stale" | null;
  seq: number;
  /** When its last publish was acknowledged and when the apply run holding it started
   * (`performance.now()`, for the phase metrics). */
  ackedAt?: number;
  applyAt?: number;
}

/** A queued write transaction, due at `deadline`; `position` is told where it landed. */
export interface Task {
  fn: () => unknown;
  deadline: number;
  position?: (seq: number) => void;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
  writes?: Write[];
  /** Set once the task ran against the log's tail as it was after a failure. */
  checked?: boolean;
}

/** What the replica reads the log through: the link itself, or a test's wrapper around it
 * that plays faults (`lib/faults/`). */
export type LogAccess = Pick<ClusterLink, "read" | "follow" | "subscribe">;

/** Tunables: a write not applied within `writeDeadlineMs` fails with 503 (its outcome then
 * unknown); a stopped node waits `rebuildPauseMs` before it rebuilds (default 1000, doubled at
 * each further attempt); joins of streams a stopped node names get a reset for `unsureMs`. */
export interface ReplicationOptions {
  writeDeadlineMs: number;
  rebuildPauseMs?: number;
  unsureMs?: number;
}

/** See the module comment. Fields are shared by the parts; each part's own stay with it. */
export class ReplicaState implements RunningJob {
  readonly local: StoreEnv;
  /** Databases applied only on the node that wrote them (`Storage.nodeLocal`). */
  readonly localDbs = new Set(CLUSTER_LOCAL_DBS);
  readonly changes = new LogChangeFeed();
  readonly positions: Database<number, Key>;
  readonly recentDb: Database<RecentRecord, Key>;
  readonly chainDb: Database<string, Key>;
  #raw = new Map<string, Database>();
  /** The running job, as the tables see it (`ReplicatedTable`). */
  recording: Write[] | null = null;
  reading: ReadSet | null = null;
  spec: SnapshotRun | null = null;
  recent!: RecentWrites;
  applied: number;
  /** Set once a majority of the nodes applied the log differently: no more writes here. */
  diverged: string | undefined;
  /** Set from then until the rebuilt store caught up and a majority confirmed it. */
  rebuilding: string | undefined;
  /** While the store is being replaced (nothing is applied). */
  replacing = false;
  closed = false;
  failing: string | undefined;
  queue: Task[] = [];
  /** Batches out (published, no outcome yet), with when each went out. */
  inflight = new Set<{ since: number }>();
  /** Batches written here and not yet reached by the log. */
  awaiting = new Map<string, Outcome>();
  /** When a batch of this node's was last found in the log, the last apply, the last position
   * of the log seen. */
  lastAppend = Date.now();
  lastApply = Date.now();
  knownTail = 0;
  buffer = new Map<number, Uint8Array>();
  /** The drain of the buffered log, and the one commit of it running. */
  applying: Promise<void> | undefined;
  applyingRun: Promise<void> | undefined;
  #tailRequest: Promise<number> | undefined;

  constructor(
    readonly path: string,
    readonly link: ClusterLink,
    readonly log: LogAccess,
    readonly opts: ReplicationOptions,
  ) {
    // The log (a JetStream quorum) is the durable copy; the local commit need not wait for the
    // disk: a node that crashes resumes from the position its last commit recorded.
    this.local = new StoreEnv(path, false);
    this.positions = this.rawDb<number>(POSITION_DB);
    this.applied = this.positions.get("applied") ?? 0;
    this.recentDb = this.rawDb(RECENT_DB);
    this.chainDb = this.rawDb<string>(CHAIN_DB);
    this.loadHistory();
    for (const name of this.rawDb(NODE_LOCAL_DB).getKeys()) this.localDbs.add(name as string);
  }

  /** Whether this node stopped itself and has not yet rebuilt its store and been confirmed. */
  get stopped(): boolean {
    return this.diverged !== undefined || this.rebuilding !== undefined;
  }

  /** A database as stored, outside the replicated write path. */
  rawDb<V>(name: string): Database<V, Key> {
    if (!this.#raw.has(name)) this.#raw.set(name, this.local.db(name));
    return this.#raw.get(name) as Database<V, Key>;
  }

  /** Loads the recent writes of the positions the store keeps (up to the one applied). */
  loadHistory(): void {
    const stored: [number, [string, Key][], string?][] = [];
    for (
      const { key, value } of this.recentDb.getRange({ start: this.applied - CONFLICT_WINDOW + 1 })
    ) {
      stored.push(
        Array.isArray(value) ? [key as number, value] : [key as number, value.w, value.b],
      );
    }
    this.recent = new RecentWrites(CONFLICT_WINDOW, stored);
  }

  /** Writes a write set to the raw databases (inside a transaction). */
  write(writes: Write[], mine: boolean): void {
    for (const w of writes) {
      if (!mine && this.localDbs.has(w[1])) continue;
      const db = this.rawDb(w[1]);
      if (w[0] === 0) db.put(w[2], w[3]);
      else db.remove(w[2]);
    }
  }

  /** The log's last position; concurrent callers share one request. */
  tail(): Promise<number> {
    this.#tailRequest ??= this.link.lastSeq().finally(() => (this.#tailRequest = undefined));
    return this.#tailRequest;
  }
}

/** `seq` as 8 bytes (big-endian float), as announced on `HEAD_SUBJECT`. */
export function encodeSeq(seq: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setFloat64(0, seq);
  return out;
}

/** The inverse of `encodeSeq` (NaN for anything else). */
export function decodeSeq(data: Uint8Array): number {
  return data.byteLength === 8 ? new DataView(data.buffer, data.byteOffset).getFloat64(0) : NaN;
}
