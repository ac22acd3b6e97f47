// `ReplicatedTable`: the replicated store's `Table` (lib/store/table.ts), what products hold of
// one of its databases. Inside a replicated transaction it records the job's reads (for the
// conflict check) and writes (the batch that goes to the log); during a speculative run on a
// read snapshot its writes go to the run's overlay and its reads see them (`overlay.ts`).
import type { Database, Key, Transaction } from "lmdb";
import type { Entry, Range, Table } from "../store/table.ts";
import { rangeBounds, type ReadSet } from "./conflicts.ts";
import type { Write } from "./log_changes.ts";
import { OverlayReads, type WriteOverlay } from "./overlay.ts";

/** What a put or remove returns during a speculative run on a snapshot (lmdb-js returns a
 * promise resolved with true inside a synchronous transaction). */
const DONE = Promise.resolve(true);

/** A speculative run on a read snapshot (`ReplicatedEnv`): its overlay of writes, the
 * snapshot, the databases' views of both, whether it is still going, and the first call it
 * could not serve exactly (it then runs again in a write transaction). */
export interface SnapshotRun {
  overlay: WriteOverlay;
  txn: Transaction;
  views: Map<string, OverlayReads>;
  live: boolean;
  unsupported?: string;
}

/** The job its store is running now, as a table sees it (all null outside one). */
export interface RunningJob {
  /** Where the job's writes are recorded. */
  readonly recording: Write[] | null;
  /** Where the job's reads are recorded. */
  readonly reading: ReadSet | null;
  /** The speculative run on a snapshot, when the job runs on one. */
  readonly spec: SnapshotRun | null;
}

/**
 * One database of the replicated store as products see it: reads and writes of the running job
 * are recorded (`job`); outside a snapshot run they go to the local database `raw`, during one
 * to the run's overlay over its snapshot.
 */
export class ReplicatedTable<V = unknown> implements Table<V> {
  #name: string;
  #raw: Database<V, Key>;
  #job: RunningJob;

  /** The table `name` over the local database `raw`, recording into `job`. */
  constructor(name: string, raw: Database<V, Key>, job: RunningJob) {
    this.#name = name;
    this.#raw = raw;
    this.#job = job;
  }

  /** This table's view of the running snapshot run, if one is going. */
  #view(): OverlayReads | undefined {
    const spec = this.#job.spec;
    if (!spec) return undefined;
    let v = spec.views.get(this.#name);
    if (!v) {
      spec.views.set(
        this.#name,
        v = new OverlayReads(
          this.#name,
          this.#raw as Database,
          spec.overlay,
          spec.txn,
          () => spec.live,
        ),
      );
    }
    return v;
  }

  /** A call the overlay cannot serve exactly: the run goes again in a write transaction. */
  #unsupported(what: string): never {
    this.#job.spec!.unsupported ??= what;
    throw new Error(
      `speculation on a snapshot cannot serve ${what}; it runs again in a write transaction`,
    );
  }

  /** The row's value (recorded as read). */
  get(key: Key): V | undefined {
    this.#job.reading?.p.push([this.#name, key]);
    const v = this.#view();
    if (!v) return this.#raw.get(key);
    return v.get(key) as V | undefined;
  }

  /** Whether the row exists (recorded as read). */
  doesExist(key: Key): boolean {
    this.#job.reading?.p.push([this.#name, key]);
    const v = this.#view();
    if (!v) return this.#raw.doesExist(key);
    return v.doesExist(key);
  }

  /** Rows in key order (the range recorded as read). */
  getRange(range?: Range): Iterable<Entry<V>> {
    this.#job.reading?.g.push([this.#name, ...rangeBounds(range)]);
    const v = this.#view();
    if (!v) return this.#raw.getRange(range);
    if (!OverlayReads.supportsRange(range)) this.#unsupported("getRange with these options");
    return v.range(range) as Iterable<Entry<V>>;
  }

  /** Keys in key order (the range recorded as read). */
  getKeys(range?: Range): Iterable<Key> {
    this.#job.reading?.g.push([this.#name, ...rangeBounds(range)]);
    const v = this.#view();
    if (!v) return this.#raw.getKeys(range);
    if (!OverlayReads.supportsRange(range)) this.#unsupported("getKeys with these options");
    return v.range({ ...range, values: false }) as Iterable<Key>;
  }

  /** Writes the row (recorded as written). A plain put: a version or a condition would not
   * replicate. */
  put(key: Key, value: V): Promise<boolean> {
    this.#job.recording?.push([0, this.#name, key, value]);
    const v = this.#view();
    if (!v) return this.#raw.put(key, value);
    v.put(key, value);
    return DONE;
  }

  /** Removes the row (recorded as written). */
  remove(key: Key): Promise<boolean> {
    this.#job.recording?.push([1, this.#name, key]);
    const v = this.#view();
    if (!v) return this.#raw.remove(key);
    v.remove(key);
    return DONE;
  }
}
