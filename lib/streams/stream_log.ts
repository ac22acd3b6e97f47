// The log contract of the stream layer (`StreamLog`): what every ordered product appends to,
// replays from and follows; `OrderedLog` (lib/store/) implements it.
/** A stored log entry with its position. */
export interface LogRecord<E = unknown> {
  position: number;
  /** Unix ms when the entry was appended. */
  time: number;
  entry: E;
}

/** What `prepare` hands back to `append`: the entries to store and what to write with them. */
export interface Prepared<E, R> {
  /** One or more entries; they get contiguous positions `head + 1 ...`. */
  entries: E[];
  /** Writes derived state (product tables) inside the same transaction. If it throws, the
   * append rejects with that error and nothing of it (entries, head, derived state) is kept. */
  apply?: (firstPosition: number) => void;
  /** Value handed back to the caller and to `publish`. */
  result: R;
}

/** What an append resolves with by default: its first position, entry count and result. */
export interface Appended<R> {
  position: number;
  count: number;
  result: R;
}

/** Called once per append, strictly in position order per stream, after the commit is durable. */
export type PublishFn<E, R> = (firstPosition: number, entries: E[], result: R) => void;

/** Sees, on this node, the appends and purges another node made (clustered mode): `appended`
 * in position order per stream, after they are stored here. */
export interface LogFollower {
  appended(stream: string, first: number, entries: unknown[]): void;
  purged(stream: string, epoch: string): void;
}

/**
 * The ordered log behind every stream, as the stream layer and the products see it. The
 * embedded implementation is `OrderedLog` (LMDB); a clustered one can sit behind the same
 * interface. Products never reach past it to the storage.
 *
 * Contract (what every implementation guarantees):
 * - Positions: per stream, contiguous integers from 1; `head` is the latest (0 when never
 *   written). `first` is the oldest retained (`head + 1` when none is).
 * - Atomicity: `append` stores all the entries `prepare` returns, with their derived state,
 *   or nothing (when `prepare`/`apply` throws or storage refuses the commit); it resolves only
 *   once the write is durable.
 * - Order: `publish` callbacks run after durability, strictly in position order per stream;
 *   no callback sees a write a crash could lose.
 * - Join without gaps: `whenPublished(s, N, fn)` runs `fn` in the turn entry N has been
 *   published (at once if it already was), so reading a snapshot at N and subscribing in
 *   `fn` hands over to live delivery at exactly N + 1; if the store is replaced meanwhile
 *   (a clustered node rebuilding), the wait is dropped instead.
 * - Epochs: `epoch` names the stream's current life. `purge` deletes every entry and starts a
 *   new epoch, so a client position from before the purge is recognisably stale.
 */
export interface StreamLog {
  head(stream: string): number;
  first(stream: string): number;
  epoch(stream: string): string;
  after<E = unknown>(stream: string, position: number, limit?: number): LogRecord<E>[];
  before<E = unknown>(stream: string, before: number, limit: number): LogRecord<E>[];
  /** `settle`, when given, makes what the append resolves with from its first position, count
   * and result, in the reaction that settles it (one promise reaction fewer than a `then`). */
  append<E, R, T = Appended<R>>(
    stream: string,
    prepare: (head: number) => Prepared<E, R>,
    publish?: PublishFn<E, R>,
    settle?: (position: number, count: number, result: R) => T,
  ): Promise<T>;
  /** `dropped` runs instead of `fn` when the wait became void (clustered mode: the store was
   * replaced under the log, so position `position` of the old store may never be published). */
  whenPublished(stream: string, position: number, fn: () => void, dropped?: () => void): void;
  /** Whether a client resuming `stream` at `position` (with `epoch`, if it sent one) may hold
   * entries of another history there (clustered mode: a node that diverged sent them; see
   * `HistoryReplaced`): such a resume gets a reset, never a replay. */
  replacedAt(stream: string, position: number, epoch?: string): boolean;
  purge(stream: string, apply?: () => void, publish?: (epoch: string) => void): Promise<string>;
  trim(stream: string, opts: { maxCount?: number; maxAgeMs?: number }): Promise<number>;
  /** Registers a follower of other nodes' writes (never called on one node alone). */
  follow(fn: LogFollower): void;
}
