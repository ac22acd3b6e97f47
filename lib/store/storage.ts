// The storage seam (`Storage`): what the ordered logs, the products and the server need of a
// store, implemented once for one node (`StoreEnv`, env.ts) and once for a cluster
// (`ReplicatedEnv`, lib/cluster/), chosen once at start; the commit path each brings
// (`Commits`) and the typed changes a replicated store hands the ordered logs.
import type { Key, Table } from "./table.ts";
import type { LogRecord } from "../streams/stream_log.ts";

/**
 * How writes reach a store: every ordered log and product writes through its store's
 * `Commits`. One node groups them (`CommitQueue`: group commit with a write-behind cache); a
 * replicated store runs each job as its own transaction (`DirectCommits`).
 */
export interface Commits {
  /** Runs `fn` in a durable write transaction; resolves with its result once durable, rejects
   * with its error (nothing of it written) or the commit's. `staged`: `fn` writes only through
   * these `Commits`, never to a database itself. */
  run<T>(fn: () => T, staged?: boolean): Promise<T>;
  /** The row's current value as the running job sees it; `load` reads it from the store, and
   * `fresh` says whether a row still being committed is what the store now holds. */
  read<V>(
    db: Table<V>,
    key: Key,
    load?: () => V | undefined,
    fresh?: (value: V) => boolean,
  ): V | undefined;
  /** Writes a row (`undefined` removes it); `weight` is roughly its size in bytes. */
  write<V>(db: Table<V>, key: Key, value: V | undefined, weight?: number): void;
  /** Writes a row derived from other stored rows (a store may cache it instead of storing it;
   * readers pass `read` a `load` that derives it again). */
  keep<V>(db: Table<V>, key: Key, value: V | undefined, weight?: number): void;
  /** Puts a new row nobody reads back through these `Commits` (a log entry). */
  put<V>(db: Table<V>, key: Key, value: V): void;
  /** Notes a row the running job has just written to the database itself. */
  track<V>(db: Table<V>, key: Key, value: V | undefined, weight?: number): void;
}

/** A change another node made to one stream of an ordered log, as it is applied here. */
export interface StreamChange {
  stream: string;
  /** The stream's new epoch when the change purged it (told first). */
  purged?: string;
  /** Entries appended (after the purge, if any), in position order; none for a trim. */
  appended: LogRecord[];
}

/** Sees the changes other nodes make to one ordered log: `applying` just ahead of the local
 * commit that stores them (readers may see them from then on), `applied` once that commit is
 * durable (`committed`) or failed. */
export interface LogChangeListener {
  applying(changes: StreamChange[]): void;
  applied(changes: StreamChange[], committed: boolean): void;
  /** The store under the log was replaced (a node that stopped itself rebuilt it): whatever
   * was derived from the old store in memory is void, and joins waiting on it are dropped. */
  replaced(): void;
  /** Clients may hold entries of another history in some streams (see `HistoryReplaced`). */
  historyReplaced(change: HistoryReplaced): void;
}

/** Positions of one stream at which a client may hold entries of another history: from the
 * first a diverged node wrote after the last position a majority confirmed, up to its head
 * when it stopped (`null`: no known end). */
export type UnsureRange = [from: number, to: number | null];

/**
 * Clients may hold entries of another history (a clustered node that found itself diverged
 * published entries the majority never holds) in these streams of an ordered log, so a join
 * resuming such a position gets a reset, never a replay (`StreamLog.replacedAt`):
 * - with `until` (ms since the epoch), for a while: a resume at or past a stream's first
 *   position, whatever its epoch (`"all"`: every stream, any position);
 * - without, for good, told inside a write transaction of the store: each stream gets a new
 *   epoch, its entries kept (a resume of an older epoch is reset), and its range is recorded
 *   (a resume without an epoch inside it is reset).
 */
export type HistoryReplaced =
  | { streams: Map<string, UnsureRange> | "all"; until: number }
  | { streams: Map<string, UnsureRange>; until?: undefined };

/** Other nodes' changes to the ordered logs of a replicated store. */
export interface RemoteChanges {
  /** Registers `listener` for the ordered log named `log` (see `OrderedLog`). */
  follow(log: string, listener: LogChangeListener): void;
}

/**
 * A store: named tables (`Table`), durable transactions, a commit path, readiness and shutdown.
 * Chosen once at start: `StoreEnv` on one node, `ReplicatedEnv` in clustered mode.
 */
export interface Storage {
  /** The named table `name` (see `Table`: ordered-binary keys, so arrays of strings and
   * numbers sort naturally). */
  db<V = unknown>(name: string): Table<V>;
  /**
   * Declares the database `name` node-local and opens it: its rows belong to this node (a
   * webhook outbox: each node sends what it queued), are never shared with other nodes and are
   * left out of a snapshot another node starts from. Call before writing to it.
   */
  nodeLocal<V = unknown>(name: string): Table<V>;
  /** Runs `fn` in one write transaction; resolves with its result once durable. All or nothing;
   * a commit storage refuses rejects with `StorageUnavailableError`. */
  transaction<T>(fn: () => T): Promise<T>;
  /** The commit path every ordered log and product of this store writes through. */
  readonly commits: Commits;
  /** Other nodes' changes (clustered mode); absent when this node is the only writer. */
  readonly remote?: RemoteChanges;
  /** Why this store cannot take writes now (readiness), or undefined when it can. */
  unavailable(): string | undefined;
  /** Refuses new transactions and resolves once every started one has settled. */
  drain(): Promise<void>;
  /** Resolves once every write issued so far is on disk. */
  flushed(): Promise<void>;
  /** Writes a consistent copy of the store to `path`. */
  backup(path: string): Promise<void>;
  /** Closes the store after pending writes complete. */
  close(): Promise<void>;
}
