// The one LMDB environment of the data dir (`StoreEnv`), the local implementation of `Storage`:
// named databases, durable transactions and batches, storage failures as
// `StorageUnavailableError`, backup and close.
import { statfsSync } from "node:fs";
import process from "node:process";
import { setImmediate } from "node:timers";
import { dirname, join } from "node:path";
import { type Database, type Key, open, type RootDatabase } from "lmdb";
import { asStorageError, quietLmdbCommitErrors, StorageUnavailableError } from "./errors.ts";
import { record } from "../metrics/mod.ts";
import { log } from "../log/mod.ts";
import { CommitQueue } from "./commit_queue.ts";
import { CODEC_OPTIONS } from "./codec.ts";
import { prefixCachedKeys } from "./keys.ts";
import type { Storage } from "./storage.ts";
import type { Table } from "./table.ts";

/** The database holding the commit chain's one row (see `StoreEnv.chained`). */
const CHAIN_DB = "store:commit-chain";
const CHAIN_KEY = "last";

/** The LMDB environment's path inside the data dir. */
export function storePath(dataDir: string): string {
  return join(dataDir, "switchboard.mdb");
}

/**
 * The one LMDB environment in the data dir. Named databases are opened through `db(name)`.
 *
 * `overlappingSync: false` makes a commit visible to readers only after it is on disk
 * (docs/design.md, "Visible means durable"), and each write transaction's promise resolves after
 * that sync, so an awaited write is durable. Concurrent writes queued while a commit is running are
 * batched into the next commit (group commit), so throughput does not pay one fsync per write.
 *
 * The store of one node (`Storage`); a replicated store (lib/cluster/) is built around one.
 */
export class StoreEnv implements Storage {
  readonly root: RootDatabase;
  #dbs = new Map<string, Database>();
  /** Transactions started and not yet settled. */
  #pending = 0;
  #idle: (() => void)[] = [];
  #closing = false;
  #commits: CommitQueue | undefined;
  #path: string;
  /** The last commit storage refused (no commit succeeded since), with the free bytes then. */
  #refused: { reason: string; free: number } | undefined;
  /** The versioned row that chains batches (see `chained`), opened with the commit queue. */
  #chain: Database<true, Key> | undefined;
  /** The last mark a chained batch was given (the stored one at open, then counting up). */
  #mark = 0;
  /** A chained batch's commit was timed in this turn of the event loop (see `chained`). */
  #timedThisTurn = false;

  /** `syncEachCommit: false` (clustered mode, where the replicated log is the durable copy)
   * makes commits visible before they reach the disk, keeping LMDB's crash consistency. */
  constructor(path: string, syncEachCommit = true) {
    this.#path = path;
    quietLmdbCommitErrors(); // a refused commit is logged once, as JSON (see #commit)
    this.root = open({
      path,
      overlappingSync: !syncEachCommit,
      maxDbs: 64,
      // Values are JSON-shaped; msgpack is lmdb-js's default structured encoding.
      encoding: "msgpack",
      sharedStructuresKey: undefined,
      ...CODEC_OPTIONS,
    });
    this.root.on("aftercommit", () => record.transaction());
  }

  /** A named database with ordered-binary keys (arrays of strings/numbers sort naturally): on
   * one node, lmdb-js's database itself is the `Table` products hold (see `table`). */
  db<V = unknown>(name: string): Database<V, Key> {
    let db = this.#dbs.get(name);
    if (!db) {
      // ordered-binary keys, their leading string decoded once per run (keys.ts); lmdb-js
      // takes a `keyEncoder` that its types do not declare.
      const keys: Record<string, unknown> = { keyEncoder: prefixCachedKeys() };
      db = this.root.openDB({
        name,
        ...keys,
        encoding: "msgpack",
        ...CODEC_OPTIONS,
      });
      this.#dbs.set(name, db);
    }
    return db as Database<V, Key>;
  }

  /**
   * Runs `fn` inside one write transaction; resolves with its result once durable.
   * All or nothing: lmdb-js batches concurrent transactions into one commit and does not undo
   * writes made before a throw, so `fn` runs in a child transaction that is aborted when it
   * throws. The promise then rejects and none of `fn`'s writes is committed. A commit that
   * fails in storage (disk full) rejects with `StorageUnavailableError`.
   */
  transaction<T>(fn: () => T): Promise<T> {
    return this.#commit(() => this.root.transaction(() => this.root.childTransaction(fn) as T));
  }

  /** Runs one commit (`transaction`, `batch`, `chained`), timing it and mapping a storage
   * failure. `chained`: a chained batch, which resolves false when it was skipped (neither a
   * commit nor a refusal) and whose commits are timed once per transaction (see `chained`). */
  async #commit<T>(commit: () => Promise<T>, chained = false): Promise<T> {
    if (this.#closing) throw new StorageUnavailableError("server shutting down");
    this.#pending++;
    const started = performance.now();
    try {
      const result = await commit();
      if (chained) {
        if (result === false) return result;
        this.#timeChained(started);
      } else record.commit((performance.now() - started) / 1000, false);
      this.#refused = undefined;
      return result;
    } catch (err) {
      const mapped = await asStorageError(err, this.#path);
      const refused = mapped instanceof StorageUnavailableError;
      record.commit((performance.now() - started) / 1000, refused);
      if (refused && !this.#closing) {
        // Ends LMDB's own unterminated stderr text, so the log line below stays a line of its
        // own where both streams are collected together.
        if (mapped.printedByLmdb) process.stderr.write("\n");
        log.error("storage refused a commit", { reason: mapped.reason });
      }
      if (refused) this.#refused = { reason: mapped.reason, free: this.#freeBytes() };
      throw mapped;
    } finally {
      if (--this.#pending === 0) { for (const wake of this.#idle.splice(0)) wake(); }
    }
  }

  /**
   * Runs `fn` at once, outside any transaction; every put and remove it makes is queued for
   * lmdb-js's write thread as one batch, committed as one transaction, so the rows land
   * together or not at all; resolves with `fn`'s result once that commit is durable. Reads in
   * `fn` see the store as last committed, not its own writes. A commit that fails in storage
   * rejects with `StorageUnavailableError`. Nothing is undone when `fn` throws: what it put
   * before the throw still commits, so callers decide everything first and put last (as
   * `CommitQueue` does).
   */
  batch<T>(fn: () => T): Promise<T> {
    let result: T;
    return this.#commit(() => this.root.batch(() => void (result = fn())).then(() => result));
  }

  /**
   * Like `batch`, for a chain of batches that may be handed over while earlier ones are still
   * committing: `fn`'s puts commit only if the batch marked `after` committed (none: at once),
   * as one transaction with it or in a later one, so a batch derived from an earlier one's rows
   * is never stored without them. Returns this batch's mark (to chain the next one on) and a
   * promise that resolves true once the batch is durable, false when it was skipped (`after`
   * did not commit: nothing of it written), and rejects as `batch` does. lmdb-js runs the
   * batches handed over while a commit syncs as the next transaction, without waiting for the
   * JavaScript thread. The chain is one row of its own database whose version is the mark of
   * the last batch committed; `fn` runs at once, as in `batch`.
   */
  chained(
    fn: () => void,
    after: number | undefined,
  ): { mark: number; committed: Promise<boolean> } {
    const chain = this.#chain ??= this.#openChain();
    const mark = ++this.#mark;
    const body = () => {
      fn();
      chain.put(CHAIN_KEY, true, mark);
    };
    const commit = () =>
      (after === undefined
        ? chain.batch(body)
        : chain.ifVersion(CHAIN_KEY, after, body)) as Promise<boolean>;
    return { mark, committed: this.#commit(commit, true) };
  }

  /** Opens the chain's database and takes up its last mark (marks only grow, across runs). */
  #openChain(): Database<true, Key> {
    const chain = this.root.openDB<true, Key>({ name: CHAIN_DB, useVersions: true });
    this.#mark = chain.getEntry(CHAIN_KEY)?.version ?? 0;
    return chain;
  }

  /** Records a chained batch's commit time, once per transaction: the batches of one
   * transaction settle in one turn, oldest first, so the first to settle in a turn times it
   * (from its hand-over); the others were part of it. (Transactions are counted apart, from
   * lmdb-js's `aftercommit`: two that end before the JavaScript thread looks are timed once.) */
  #timeChained(started: number): void {
    if (this.#timedThisTurn) return;
    this.#timedThisTurn = true;
    setImmediate(() => (this.#timedThisTurn = false));
    record.commit((performance.now() - started) / 1000, false);
  }

  /** The group-commit queue every ordered log and product of this store writes through. */
  get commits(): CommitQueue {
    if (!this.#commits) {
      this.#chain ??= this.#openChain();
      this.#commits = new CommitQueue(this);
    }
    return this.#commits;
  }

  /** On one node every database is node-local: the same as `db` (see `Storage.nodeLocal`). */
  nodeLocal<V = unknown>(name: string): Table<V> {
    return table(this.db<V>(name));
  }

  /**
   * Why this store cannot take writes now, or undefined when it can, from what it knows and
   * without writing (readiness): shutting down, or its last commit was refused and the disk
   * has not gained space since.
   */
  unavailable(): string | undefined {
    if (this.#closing) return "storage unavailable: server shutting down";
    const refused = this.#refused;
    if (refused && this.#freeBytes() <= refused.free + 1024 * 1024) return refused.reason;
    return undefined;
  }

  /** Bytes free for this store on its file system (0 when unknown). */
  #freeBytes(): number {
    try {
      const s = statfsSync(dirname(this.#path));
      return s.bavail * s.bsize;
    } catch {
      return 0;
    }
  }

  /**
   * Shutdown, step one: refuses new transactions (`server shutting down`) and resolves once
   * every transaction already started has committed or failed.
   */
  async drain(): Promise<void> {
    this.#closing = true;
    if (this.#pending > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** Resolves once every write issued so far is on disk. */
  flushed(): Promise<void> {
    return this.root.flushed as unknown as Promise<void>;
  }

  /** Writes a consistent copy of the environment to `path` (compacting). */
  backup(path: string): Promise<void> {
    return this.root.backup(path, true);
  }

  /** Closes the environment after pending writes complete (call `drain` first). */
  async close(): Promise<void> {
    await this.drain();
    await this.root.close();
  }
}

/** lmdb-js's database as the seam's `Table` (the same object: its own methods serve every one
 * of `Table`'s, so a table on one node costs nothing over the database). */
export function table<V>(db: Database<V, Key>): Table<V> {
  return db;
}
