/**
 * The typed changes a replicated store hands the ordered logs (`RemoteChanges`): another
 * node's write set, read once here in the ordered logs' layout (`lib/store/log_layout.ts`), as
 * per-stream appends and purges, so no ordered log reads write tuples.
 */
import type { Key } from "lmdb";
import { entryRecord, type LogDbNames, logDbNames, type StoredEntry } from "../store/log_layout.ts";
import type {
  HistoryReplaced,
  LogChangeListener,
  RemoteChanges,
  StreamChange,
  UnsureRange,
} from "../store/storage.ts";

/** Per ordered log (by name), streams and their positions of another history. */
type PerLog = Map<string, Map<string, UnsureRange>>;

/** One replicated write: `[0, db, key, value]` puts, `[1, db, key]` removes. */
export type Write = [0, string, Key, unknown] | [1, string, Key];

/** The changes a write set makes to the ordered log laid out in `names`: one per stream whose
 * head or epoch it writes, with its new epoch if it purged the stream (a purge removes the
 * head row just before it writes the epoch; an epoch written alone renews it, entries kept),
 * and the entries it appends (after that purge), in position order. */
export function streamChanges(names: LogDbNames, writes: Write[]): StreamChange[] {
  const changes = new Map<string, StreamChange>();
  const change = (stream: string) => {
    let c = changes.get(stream);
    if (!c) changes.set(stream, c = { stream, appended: [] });
    return c;
  };
  const appended = new Map<string, ReturnType<typeof entryRecord>[]>();
  /** Streams whose head row was removed since their last epoch write (a purge under way). */
  const headRemoved = new Set<string>();
  for (const w of writes) {
    if (w[1] === names.meta) {
      change(w[2] as string);
      if (w[0] === 1) headRemoved.add(w[2] as string);
    } else if (w[1] === names.epochs) {
      const c = change(w[2] as string);
      if (w[0] === 0 && headRemoved.delete(c.stream)) {
        c.purged = w[3] as string;
        appended.delete(c.stream);
      }
    } else if (w[1] === names.entries && w[0] === 0) {
      const key = w[2] as [string, number];
      let list = appended.get(key[0]);
      if (!list) appended.set(key[0], list = []);
      list.push(entryRecord(key, w[3] as StoredEntry));
    }
  }
  for (const c of changes.values()) {
    c.appended = (appended.get(c.stream) ?? []).sort((a, b) => a.position - b.position);
  }
  return [...changes.values()];
}

/** How an ordered log's entries database is named (`logDbNames`). */
const ENTRIES_SUFFIX = logDbNames("").entries;

/** Per ordered log (by name), the streams with entries among `keys` (`[db, key]` pairs write
 * sets wrote) and the lowest and highest position written in each. */
export function rangesWritten(
  keys: Iterable<[string, Key]>,
): Map<string, Map<string, [number, number]>> {
  const out = new Map<string, Map<string, [number, number]>>();
  for (const [db, key] of keys) {
    if (
      !db.endsWith(ENTRIES_SUFFIX) || !Array.isArray(key) || typeof key[0] !== "string" ||
      typeof key[1] !== "number"
    ) continue;
    const log = db.slice(0, -ENTRIES_SUFFIX.length);
    if (logDbNames(log).entries !== db) continue;
    let streams = out.get(log);
    if (!streams) out.set(log, streams = new Map());
    const known = streams.get(key[0]);
    streams.set(
      key[0],
      known ? [Math.min(known[0], key[1]), Math.max(known[1], key[1])] : [key[1], key[1]],
    );
  }
  return out;
}

/**
 * The ordered logs' listeners of a replicated store: `applying` and `applied` take the write
 * sets of other nodes around the local commit that applies them and tell each log's listeners
 * the changes to that log; `replaced` and `historyReplaced` tell them what a rebuilt store
 * means for what they derived from it and for clients' positions (see `LogChangeListener`).
 */
export class LogChangeFeed implements RemoteChanges {
  #logs: { name: string; names: LogDbNames; listener: LogChangeListener }[] = [];
  /** The write set being applied and its changes per log (read once, told twice). */
  #pending: { writes: Write[]; changes: StreamChange[][] } | undefined;

  /** Registers `listener` for the ordered log named `log`. */
  follow(log: string, listener: LogChangeListener): void {
    this.#logs.push({ name: log, names: logDbNames(log), listener });
  }

  /** The store was replaced under every log (see `LogChangeListener.replaced`). */
  replaced(): void {
    for (const { listener } of this.#logs) listener.replaced();
  }

  /** Clients may hold entries of another history in the streams named per log name (`"all"`:
   * every stream of every log), until `until` or, inside a write transaction, for good (see
   * `HistoryReplaced`). */
  historyReplaced(streams: PerLog | "all", until: number): void;
  historyReplaced(streams: PerLog): void;
  historyReplaced(streams: PerLog | "all", until?: number): void {
    for (const { name, listener } of this.#logs) {
      const mine = streams === "all" ? "all" : streams.get(name);
      if (mine) listener.historyReplaced({ streams: mine, until } as HistoryReplaced);
    }
  }

  /** Every stream with a head row in each followed log, from position 1 (what a report names
   * when a node cannot tell which streams it wrote); `keysOf` lists a database's keys. */
  everyStream(keysOf: (db: string) => Iterable<Key>): Map<string, Map<string, number>> {
    const out = new Map<string, Map<string, number>>();
    for (const { name, names } of this.#logs) {
      const streams = new Map<string, number>();
      for (const key of keysOf(names.meta)) if (typeof key === "string") streams.set(key, 1);
      if (streams.size > 0) out.set(name, streams);
    }
    return out;
  }

  /** Another node's `writes` are about to be committed here. */
  applying(writes: Write[]): void {
    const changes = this.#changes(writes);
    this.#logs.forEach(({ listener }, i) => changes[i].length > 0 && listener.applying(changes[i]));
  }

  /** Another node's `writes` are committed here (`committed`) or failed to be. */
  applied(writes: Write[], committed: boolean): void {
    const changes = this.#changes(writes);
    this.#pending = undefined;
    this.#logs.forEach(({ listener }, i) =>
      changes[i].length > 0 && listener.applied(changes[i], committed)
    );
  }

  #changes(writes: Write[]): StreamChange[][] {
    if (this.#pending?.writes !== writes) {
      this.#pending = {
        writes,
        changes: this.#logs.map(({ names }) => streamChanges(names, writes)),
      };
    }
    return this.#pending.changes;
  }
}
