// How an ordered log is laid out in a store: its databases and the stored form of an
// entry. `OrderedLog` writes this layout; a replicated store reads other nodes' changes in it.
import type { LogRecord } from "../streams/stream_log.ts";

/** The databases of the ordered log named `name`: entries keyed `[stream, position]`, head rows
 * keyed by stream, epochs keyed by stream, and (clustered mode only) the positions of a stream
 * whose clients may hold entries of another history, for good (`HistoryReplaced`), keyed
 * `[stream, from]` with the last such position (or null) as value. */
export interface LogDbNames {
  entries: string;
  meta: string;
  epochs: string;
  replaced: string;
}

/** The databases of the ordered log named `name`. */
export function logDbNames(name: string): LogDbNames {
  return {
    entries: `${name}:entries`,
    meta: `${name}:meta`,
    epochs: `${name}:epochs`,
    replaced: `${name}:unsure`,
  };
}

/** A stored entry: `[time, entry]`; releases before 2026-11-25 stored `{ t, e }`. */
export type StoredEntry = [number, unknown] | { t: number; e: unknown };

/** The time and entry of a stored entry, in either form. */
export function unpackEntry(value: StoredEntry): { time: number; entry: unknown } {
  return Array.isArray(value)
    ? { time: value[0], entry: value[1] }
    : { time: value.t, entry: value.e };
}

/** The record of the entry stored at `key` (`[stream, position]`) as `value`. */
export function entryRecord(key: [string, number], value: StoredEntry): LogRecord {
  return { position: key[1], ...unpackEntry(value) };
}
