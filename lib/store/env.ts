import { open, type Database, type Key, type RootDatabase } from "lmdb";

/**
 * The one LMDB environment in the data dir. Named databases are opened through `db(name)`.
 *
 * `overlappingSync: false` makes a commit visible to readers only after it is on disk
 * (DESIGN.md rule 5), and each write transaction's promise resolves after that sync, so an
 * awaited write is durable. Concurrent writes queued while a commit is running are batched
 * into the next commit (group commit), so throughput does not pay one fsync per write.
 */
export class StoreEnv {
  readonly root: RootDatabase;
  #dbs = new Map<string, Database>();

  constructor(path: string) {
    this.root = open({
      path,
      overlappingSync: false,
      maxDbs: 64,
      // Values are JSON-shaped; msgpack is lmdb-js's default structured encoding.
      encoding: "msgpack",
      sharedStructuresKey: undefined,
      // Read a stored 64-bit integer as a number, never a BigInt JSON cannot encode (data
      // written before the wire codec refused BigInts stays readable).
      int64AsNumber: true,
    });
  }

  /** A named database with ordered-binary keys (arrays of strings/numbers sort naturally). */
  db<V = unknown>(name: string): Database<V, Key> {
    let db = this.#dbs.get(name);
    if (!db) {
      db = this.root.openDB({
        name,
        keyEncoding: "ordered-binary",
        encoding: "msgpack",
        int64AsNumber: true,
      });
      this.#dbs.set(name, db);
    }
    return db as Database<V, Key>;
  }

  /**
   * Runs `fn` inside one write transaction; resolves with its result once durable.
   * All or nothing: lmdb-js batches concurrent transactions into one commit and does not undo
   * writes made before a throw, so `fn` runs in a child transaction that is aborted when it
   * throws. The promise then rejects and none of `fn`'s writes is committed.
   */
  transaction<T>(fn: () => T): Promise<T> {
    return this.root.transaction(() => this.root.childTransaction(fn) as T);
  }

  /** Resolves once every write issued so far is on disk. */
  flushed(): Promise<void> {
    return this.root.flushed as unknown as Promise<void>;
  }

  /** Writes a consistent copy of the environment to `path` (compacting). */
  backup(path: string): Promise<void> {
    return this.root.backup(path, true);
  }

  /** Closes the environment after pending writes complete. */
  async close(): Promise<void> {
    await this.root.close();
  }
}
