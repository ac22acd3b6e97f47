// `DirectCommits`: the commit path of a store whose transactions may run more than once and
// whose rows other writers change beside it (the replicated store): each job is its own
// transaction, nothing is staged or cached.
import type { Key, Table } from "./table.ts";
import type { Commits } from "./storage.ts";

/**
 * Runs each job as its own transaction of `target` (which may run it more than once: it must
 * be a plain function of the stored state); `read` goes straight to the store (`load`), `write`
 * and `keep` put at once, `track` has nothing to note.
 */
export class DirectCommits implements Commits {
  #target: { transaction<T>(fn: () => T): Promise<T> };

  /** Commits through `target.transaction`. */
  constructor(target: { transaction<T>(fn: () => T): Promise<T> }) {
    this.#target = target;
  }

  /** One transaction per job (`staged` changes nothing here). */
  run<T>(fn: () => T, _staged = false): Promise<T> {
    return this.#target.transaction(fn);
  }

  /** The row as the store holds it (`load`, default: as stored). */
  read<V>(
    db: Table<V>,
    key: Key,
    load: () => V | undefined = () => db.get(key),
  ): V | undefined {
    return load();
  }

  /** Puts (or, for `undefined`, removes) the row at once. */
  write<V>(db: Table<V>, key: Key, value: V | undefined): void {
    if (value === undefined) db.remove(key);
    else db.put(key, value);
  }

  /** Other writers read the store, not a cache: a derived row is stored like any other. */
  keep<V>(db: Table<V>, key: Key, value: V | undefined): void {
    this.write(db, key, value);
  }

  /** Puts the row at once. */
  put<V>(db: Table<V>, key: Key, value: V): void {
    db.put(key, value);
  }

  /** Nothing is cached, so nothing to note. */
  track<V>(_db: Table<V>, _key: Key, _value: V | undefined): void {}
}
