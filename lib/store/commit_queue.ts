// The store's group-commit queue with a write-behind cache (`CommitQueue`), through which the
// ordered logs and the products' derived rows write.
import type { Key, Table } from "./table.ts";
import { setImmediate } from "node:timers";
import type { CommitTarget } from "./commit_target.ts";
import type { Commits } from "./storage.ts";

interface Job {
  fn: () => unknown;
  /** Writes only through the queue (`write`, `keep`, `put`): runs without a child transaction. */
  staged: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** A staged or cached row: its value (`undefined`: removed) and roughly its size in bytes. */
interface Row {
  db: Table;
  key: Key;
  value: unknown;
  weight: number;
  /** Put at the end of the batch (`write`); false for rows the job wrote itself (`track`) and
   * rows that are only cached (`keep`). */
  put: boolean;
}

/** A row's place in the queue: one object per database and key while the key is interned (see
 * `#slot`), so the queue's maps are keyed by identity and the rows kept for it are fields, not
 * more lookups in maps of every row. */
interface Slot {
  /** The committed row kept for it (see `#remember`). */
  cached: Row | undefined;
  /** The row the newest batch handed over and not yet settled wrote (see `#settle`). */
  pending: Row | undefined;
}

/** A batch handed to the store and not yet settled. */
interface Flight {
  jobs: Job[];
  /** Each job's outcome, in order (`ok`: its result, else its error). */
  outcomes: { ok: boolean; value: unknown }[];
  /** The rows its jobs staged, by slot. */
  rows: Map<Slot, Row>;
  /** Its mark in the store's chain, which the next batch may be chained on; undefined when
   * nothing may be (an unstaged batch, or one whose body threw): the next waits for it. */
  mark: number | undefined;
  /** Settled: `committed` says how (`failure`: its commit's error, or `SKIPPED`). */
  settled: boolean;
  committed: boolean;
  failure: unknown;
}

/** A batch the store skipped: the batch it was chained on did not commit. */
const SKIPPED = Symbol("skipped");

/** Bytes of cached rows kept across commits, at most (oldest dropped first). */
const CACHE_BYTES = 64 * 1024 * 1024;

/** Keys kept interned (with their slots), at most; past it they are all dropped with the cache,
 * between batches. */
const MAX_INTERNED = 100_000;

/** Rough bytes a cached row costs when its writer does not say. */
const DEFAULT_WEIGHT = 128;

/**
 * Group commit with a write-behind cache, for the ordered log and the products' derived rows.
 *
 * `run(job)` queues a synchronous job; the jobs queued in one turn of the event loop run as one
 * batch, each inside its own child transaction, so one job that throws (or that LMDB refuses)
 * leaves nothing behind and does not disturb the others. A job that writes only through the
 * queue (`run(job, true)`) needs no child transaction (a child transaction's begin and commit
 * were a seventh of a hot write's CPU): what it staged is dropped when it throws.
 *
 * A batch of only such jobs runs at once on the JS thread and hands its rows to lmdb-js's write
 * thread as one atomic batch chained on the batch handed before it (`StoreEnv.chained`), even
 * while that one is still committing: lmdb-js commits every batch handed over while a commit
 * syncs as the next transaction, the moment the sync ends, so a commit takes every write that
 * arrived during the last one, with no fixed wait, and the store never waits for the JS thread
 * between commits. A batch's jobs read the rows of the batches still committing as stored
 * (they are, first, or this batch is not: the chain makes a batch commit only if the one
 * before it did). Its jobs are answered only once it is durable, and batches settle in the
 * order they were handed over. When one fails, its jobs fail, every batch chained after it is
 * skipped by the store (nothing of it stored, nothing answered), no new batch starts until all
 * have settled, and then the skipped batches' jobs run again, first, on the store as committed
 * (a job is a function of the state it reads, as a replicated store requires too). A batch with an unstaged job runs inside one write transaction
 * (`StoreEnv.transaction`) alone: it waits for every batch before it to settle, and the next
 * waits for it.
 *
 * Rows written with `write` are staged in memory and put once per batch (the last value of a
 * key wins), then kept in a bounded cache once the commit is durable, so the next write of a hot
 * stream neither reads nor decodes them. Rows staged with `keep` are cached the same way but
 * never put: they are derived from other stored rows (a stream's head from its last entry), and
 * whoever reads them passes `read` a `load` that derives them again from the store.
 *
 * `read` sees, in order: the rows the running batch staged (its running job's included: a job
 * stages into the batch, and a job that throws has its rows undone), then the row the newest
 * batch still committing wrote (inside a job as it is; outside a job, where the store must be
 * read as last committed, only when the caller's `fresh` accepts it, else the cached row when
 * `fresh` accepts that, else the store), then the cache, then the store (`load`, or the row as
 * stored). The cache is only sound while every
 * write of those rows goes through this queue (a write outside a job drops the row from it); a
 * failed commit empties it.
 *
 * The commit path of one node's store (`StoreEnv`); a replicated store, where a transaction
 * may run more than once and other nodes' writes land beside it, has its own
 * (`DirectCommits`).
 */
export class CommitQueue implements Commits {
  #env: CommitTarget;
  #queue: Job[] = [];
  /** A job of `#queue` is unstaged: its batch waits until no batch is committing. */
  #unstagedQueued = false;
  #scheduled = false;
  /** The batches handed to the store and not yet settled, oldest first. */
  #flights: Flight[] = [];
  /** A batch failed: no new one starts until every batch handed over has settled. */
  #broken = false;
  /** The jobs of batches skipped after a failed one, in order: they run again once every batch
   * handed over has settled. */
  #retry: Job[] = [];
  /** Rows staged by the running batch (its running job's included); keyed by `#slot`. */
  #batch: Map<Slot, Row> | null = null;
  /** A job is running (inside the batch's body). */
  #inJob = false;
  /** The running job is staged: its `put`s are held in `#batchPuts`. */
  #stagedJob = false;
  /** What the running job replaced in `#batch`, oldest first (a slot and its earlier row), so
   * that a job that throws leaves the batch as it found it; reused from job to job. */
  #undo: [Slot, Row | undefined][] = [];
  /** Puts (`put`) staged by the running batch's staged jobs, in order. */
  #batchPuts: [Table, Key, unknown][] = [];
  /** The slots with a cached row (`Slot.cached`), first cached first. */
  #cached = new Set<Slot>();
  #cachedBytes = 0;
  /** Each database's index into a key's slots. */
  #dbIds = new Map<Table, number>();
  /** Per string key, its slot in each database (by `#dbIds`); other keys by their JSON. */
  #interned = new Map<string, (Slot | undefined)[]>();
  #internedJson = new Map<string, (Slot | undefined)[]>();
  /** The last string key asked for and its slots: a write asks for the same key several times
   * in a row, in one database and the next (a stream's head, then its object's state). */
  #lastKey: string | undefined;
  #lastSlots: (Slot | undefined)[] = [];
  /** More than `MAX_INTERNED` keys are interned: dropped once no batch holds slots. */
  #overfull = false;

  /** A queue committing into `env`. */
  constructor(env: CommitTarget) {
    this.#env = env;
  }

  /** Runs `fn` in the next batch (see the class comment); resolves with its result once the
   * batch is durable, rejects with its error (nothing of it written) or the commit's.
   * `staged`: `fn` writes only through this queue, never to a database itself. */
  run<T>(fn: () => T, staged = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, staged, resolve: resolve as (v: unknown) => void, reject });
      if (!staged) this.#unstagedQueued = true;
      this.#schedule();
    });
  }

  /** Starts a batch of the queued jobs in the next turn, unless one is due or may not start. */
  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || !this.#mayStart()) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Whether the next batch may start now (see the class comment). */
  #mayStart(): boolean {
    const flights = this.#flights;
    if (flights.length === 0) return true;
    if (this.#broken || this.#unstagedQueued || this.#overfull) return false;
    return flights[flights.length - 1].mark !== undefined;
  }

  /**
   * The row's current value as the running job sees it (see the class comment). `load` reads
   * it from the store when no staged or cached copy answers (default: the row as stored);
   * `fresh` says whether the row a batch still committing wrote is what the store now holds.
   */
  read<V>(
    db: Table<V>,
    key: Key,
    load: () => V | undefined = () => db.get(key),
    fresh?: (value: V) => boolean,
  ): V | undefined {
    const slot = this.#slot(db, key);
    const staged = this.#batch?.get(slot);
    if (staged) return staged.value as V | undefined;
    const pending = slot.pending;
    if (pending) {
      const value = pending.value as V | undefined;
      if (this.#inJob) return value;
      if (!fresh) return load();
      if (value !== undefined && fresh(value)) return value;
      // A later batch is committing over the cached row: it answers while it is what the
      // store holds (the batches before have committed).
      const cached = slot.cached?.value as V | undefined;
      return cached !== undefined && fresh(cached) ? cached : load();
    }
    const cached = slot.cached;
    return cached ? cached.value as V | undefined : load();
  }

  /**
   * Stages a row write (`undefined` removes it) in the running job; `weight` is roughly its
   * size in bytes, for the cache's bound. Outside a job it is written at once, in the caller's
   * transaction.
   */
  write<V>(db: Table<V>, key: Key, value: V | undefined, weight = DEFAULT_WEIGHT): void {
    if (!this.#inJob) {
      this.#forget(db, key);
      if (value === undefined) db.remove(key);
      else db.put(key, value);
      return;
    }
    this.#stage(db, key, { db: db as Table, key, value, weight, put: true });
  }

  /**
   * Stages a derived row that is cached like a `write` but never put (see the class comment).
   * Outside a job it is a `write`.
   */
  keep<V>(db: Table<V>, key: Key, value: V | undefined, weight = DEFAULT_WEIGHT): void {
    if (!this.#inJob) return this.write(db, key, value, weight);
    this.#stage(db, key, { db: db as Table, key, value, weight, put: false });
  }

  /**
   * Puts a new row that nobody reads through the queue (a log entry): in a staged job it is
   * held until the end of the batch (or until a job that is not staged runs, which may read
   * it from the store) and never cached; anywhere else it is put at once.
   */
  put<V>(db: Table<V>, key: Key, value: V): void {
    if (this.#stagedJob) this.#batchPuts.push([db as Table, key, value]);
    else db.put(key, value);
  }

  /**
   * Notes a row the running job has just written itself (`undefined`: removed), for rows that
   * range reads inside the transaction must see at once: `read` sees it from now on and the
   * cache keeps it once the batch is durable. Outside a job it drops the row from the cache.
   */
  track<V>(db: Table<V>, key: Key, value: V | undefined, weight = DEFAULT_WEIGHT): void {
    if (!this.#inJob) return this.#forget(db, key);
    this.#stage(db, key, { db: db as Table, key, value, weight, put: false });
  }

  /** Stages `row` in the running batch over the same slot's earlier row, noting that row for
   * the job's undo: the last value wins, and it is put at the end of the batch when any of
   * them had to be (a kept row after a written one). */
  #stage(db: Table, key: Key, row: Row): void {
    const slot = this.#slot(db, key);
    const batch = this.#batch!;
    const earlier = batch.get(slot);
    this.#undo.push([slot, earlier]);
    batch.set(slot, earlier?.put && !row.put ? { ...row, put: true } : row);
  }

  /** Runs every queued job as one batch and hands it to the store (see the class comment). */
  #flush(): void {
    this.#scheduled = false;
    if (this.#queue.length === 0 || !this.#mayStart()) return;
    if (this.#overfull) this.#trim();
    const jobs = this.#queue;
    this.#queue = [];
    const unstaged = this.#unstagedQueued;
    this.#unstagedQueued = false;
    const flight: Flight = {
      jobs,
      outcomes: [],
      rows: new Map(),
      mark: undefined,
      settled: false,
      committed: false,
      failure: undefined,
    };
    let ran = false;
    const body = () => {
      this.#body(flight);
      ran = true;
    };
    const flights = this.#flights;
    let committed: Promise<unknown>;
    if (unstaged) committed = this.#env.transaction(body);
    else {
      const after = flights.length > 0 ? flights[flights.length - 1].mark : undefined;
      const chained = this.#env.chained(body, after);
      // A body that threw may have left some puts to commit: nothing may chain on it.
      if (ran) flight.mark = chained.mark;
      committed = chained.committed;
    }
    flights.push(flight);
    committed.then(
      (ok) => this.#settled(flight, ok !== false, SKIPPED),
      (err) => this.#settled(flight, false, err),
    );
    this.#schedule();
  }

  /** Runs a batch's jobs inside its commit (see the class comment), stages their puts, and
   * marks its rows as pending. */
  #body(flight: Flight): void {
    const batch = flight.rows;
    const outcomes = flight.outcomes;
    const root = this.#env.root;
    this.#batch = batch;
    const undo = this.#undo;
    try {
      for (const job of flight.jobs) {
        // A job stages straight into the batch; when it throws, what it staged is undone
        // (a staged job's puts dropped; a child transaction's own writes are aborted).
        undo.length = 0;
        if (!job.staged) this.#putStaged();
        const puts = this.#batchPuts.length;
        this.#inJob = true;
        this.#stagedJob = job.staged;
        try {
          const value = job.staged ? job.fn() : root.childTransaction(job.fn);
          outcomes.push({ ok: true, value });
        } catch (err) {
          for (let i = undo.length - 1; i >= 0; i--) {
            const [slot, earlier] = undo[i];
            if (earlier) batch.set(slot, earlier);
            else batch.delete(slot);
          }
          this.#batchPuts.length = puts;
          outcomes.push({ ok: false, value: err });
        }
      }
      this.#inJob = false;
      this.#stagedJob = false;
      this.#putStaged();
      for (const [slot, row] of batch) {
        slot.pending = row;
        if (!row.put) continue;
        if (row.value === undefined) row.db.remove(row.key);
        else row.db.put(row.key, row.value);
      }
    } finally {
      this.#inJob = false;
      this.#stagedJob = false;
      undo.length = 0;
      this.#batch = null;
      this.#batchPuts = [];
    }
  }

  /** A batch has settled (`committed`, or failed with `failure`): settles every batch from
   * the oldest on that has, in the order they were handed over, then starts the next. */
  #settled(flight: Flight, committed: boolean, failure: unknown): void {
    flight.settled = true;
    flight.committed = committed;
    flight.failure = failure;
    const flights = this.#flights;
    while (flights.length > 0 && flights[0].settled) this.#settle(flights.shift()!);
    if (flights.length === 0 && this.#broken) {
      this.#broken = false;
      if (this.#retry.length > 0) {
        this.#queue = this.#retry.concat(this.#queue);
        this.#retry = [];
      }
    }
    this.#schedule();
  }

  /** Answers a settled batch's jobs, caching its rows when it committed; a failed batch empties
   * the cache and fails every batch still committing after it (see the class comment). */
  #settle(flight: Flight): void {
    for (const [slot, row] of flight.rows) {
      if (slot.pending === row) slot.pending = undefined;
      if (flight.committed) this.#remember(slot, row);
    }
    const { jobs, outcomes } = flight;
    if (flight.committed) {
      for (let i = 0; i < jobs.length; i++) {
        const outcome = outcomes[i];
        if (outcome.ok) jobs[i].resolve(outcome.value);
        else jobs[i].reject(outcome.value);
      }
      return;
    }
    this.#broken = true;
    this.#dropCache();
    if (flight.failure === SKIPPED) {
      // Prepared on a batch that failed: nothing of it was stored; its jobs run again, first,
      // once every batch handed over has settled, on the store as committed.
      for (const job of jobs) this.#retry.push(job);
      return;
    }
    for (const job of jobs) job.reject(flight.failure);
  }

  /** Puts what the batch's staged jobs have `put` so far. */
  #putStaged(): void {
    for (const [db, key, value] of this.#batchPuts) db.put(key, value);
    this.#batchPuts = [];
  }

  /** Drops a row from the cache (it was written outside a job), and from the rows of the
   * batches still committing as later jobs see them. */
  #forget(db: Table, key: Key): void {
    const slot = this.#slot(db, key);
    slot.pending = undefined;
    const old = slot.cached;
    if (!old) return;
    slot.cached = undefined;
    this.#cached.delete(slot);
    this.#cachedBytes -= old.weight;
  }

  /** Empties the cache. */
  #dropCache(): void {
    for (const slot of this.#cached) slot.cached = undefined;
    this.#cached.clear();
    this.#cachedBytes = 0;
  }

  /** Forgets every interned key and slot, and the cache with them (between batches: no batch
   * holds a slot). */
  #trim(): void {
    this.#dropCache();
    this.#interned.clear();
    this.#internedJson.clear();
    this.#lastKey = undefined;
    this.#lastSlots = [];
    this.#overfull = false;
  }

  /** Caches a committed row, dropping the rows cached first past `CACHE_BYTES`. A row already
   * cached takes the new value where it stands, so the order is first cached, not last used: a
   * hot row dropped past the bound is read from the store once and cached again as the newest.
   * Nothing but the slot is written for a row already cached (no map of every cached row is
   * written, or looked up, per write: with 10k objects such a map's lookups, cache misses on
   * this machine, and its rescans by the garbage collector's young pass, were a fifth of a
   * write's JavaScript time). */
  #remember(slot: Slot, row: Row): void {
    const old = slot.cached;
    if (old) {
      this.#cachedBytes += row.weight - old.weight;
      old.value = row.value;
      old.weight = row.weight;
    } else {
      slot.cached = row;
      this.#cached.add(slot);
      this.#cachedBytes += row.weight;
    }
    if (this.#cachedBytes <= CACHE_BYTES) return;
    for (const oldest of this.#cached) {
      this.#cached.delete(oldest);
      this.#cachedBytes -= oldest.cached!.weight;
      oldest.cached = undefined;
      if (this.#cachedBytes <= CACHE_BYTES) break;
    }
  }

  /** The slot of a row: one object per database and key, found by one lookup of the key
   * (string keys; others by their JSON) shared by every database, and none when the key is the
   * one asked for last. Past `MAX_INTERNED` keys everything interned is dropped, at once when no
   * batch holds a slot, else before the next batch. */
  #slot(db: Table, key: Key): Slot {
    let id = this.#dbIds.get(db);
    if (id === undefined) this.#dbIds.set(db, id = this.#dbIds.size);
    let slots: (Slot | undefined)[];
    if (typeof key === "string") {
      if (key === this.#lastKey) slots = this.#lastSlots;
      else {
        slots = this.#interned.get(key) ?? this.#intern(this.#interned, key);
        this.#lastKey = key;
        this.#lastSlots = slots;
      }
    } else {
      const json = JSON.stringify(key);
      slots = this.#internedJson.get(json) ?? this.#intern(this.#internedJson, json);
    }
    return (slots[id] ??= { cached: undefined, pending: undefined });
  }

  /** Interns `name` in `map` with no slots yet (see `#slot` for the bound). */
  #intern(map: Map<string, (Slot | undefined)[]>, name: string): (Slot | undefined)[] {
    if (this.#interned.size + this.#internedJson.size >= MAX_INTERNED) {
      if (this.#batch === null && this.#flights.length === 0) this.#trim();
      else this.#overfull = true;
    }
    const slots: (Slot | undefined)[] = [];
    map.set(name, slots);
    return slots;
  }
}
