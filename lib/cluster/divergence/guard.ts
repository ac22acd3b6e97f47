/**
 * The check a rebuild passes before it replaces a stopped node's store: up to the last position
 * a majority confirmed, the state it would end on (the source, a snapshot or the empty store,
 * then the log after it) must hold the very batch ids the old store applied. Compared two ways:
 * position by position where the old store keeps a record (`cluster:recent`, its last
 * `CONFLICT_WINDOW` positions), and by the chained digest (`history.ts`), kept in each record
 * and every `CHAIN_CHECKPOINT_EVERY` positions for good (`cluster:chain`), extended over the log,
 * so a difference however old is seen. A store without digests (an earlier version) is compared
 * by its records alone. `refound.ts` compares stores with each other the same way.
 */
import type { Database, Key } from "lmdb";
import { CHAIN_START, chainDigest } from "./history.ts";

/** Every this many positions each store keeps its chained digest for good (`cluster:chain`). */
export const CHAIN_CHECKPOINT_EVERY = 4096;

/** Where the history the rebuild would end on differs from the confirmed one. */
export interface ConfirmedMismatch {
  /** The first differing position (`chained`: the difference lies at or before it). */
  seq: number;
  /** The old store's batch id there (a chained digest when `chained`). */
  mine: string;
  /** What the source or the log holds there (`undefined`: nothing); a digest when `chained`. */
  theirs: string | undefined;
  chained?: true;
  /** With `chained`: the last position both histories were seen equal, when known. */
  after?: number;
}

/** What a store keeps of one position: the batch id, and the chained digest when it has one. */
export interface PositionRecord {
  b: string;
  c?: string;
}

/** One side's history as its store keeps it: per-position records and digest checkpoints. */
export interface KeptHistory {
  records: Map<number, PositionRecord>;
  checkpoints: Map<number, string>;
}

/** The history a store keeps in `recent` and `chain`, up to `upTo` (older records without a
 * batch id are left out). */
export function keptHistory(
  recent: Database<unknown, Key>,
  chain: Database<unknown, Key>,
  upTo = Infinity,
): KeptHistory {
  const end = upTo === Infinity ? undefined : upTo + 1;
  const records = new Map<number, PositionRecord>();
  for (const { key, value } of recent.getRange({ end })) {
    const { b, c } = Array.isArray(value) ? {} : (value as { b?: string; c?: string });
    if (typeof key === "number" && b !== undefined) {
      records.set(key, c === undefined ? { b } : { b, c });
    }
  }
  const checkpoints = new Map<number, string>();
  for (const { key, value } of chain.getRange({ end })) {
    if (typeof key === "number" && typeof value === "string") checkpoints.set(key, value);
  }
  return { records, checkpoints };
}

/** What the check needs. */
export interface ConfirmedCheck {
  /** The last position a majority confirmed (0: nothing to check). */
  confirmed: number;
  mine: KeptHistory;
  /** The rebuild source's position (the log is replayed after it) and history. */
  sourcePosition: number;
  source: KeptHistory;
  /** The batch id the log holds at `seq` (undefined: nothing there). */
  read(seq: number): Promise<string | undefined>;
}

/** Positions read from the log at once, at most. */
const READ_AT_ONCE = 64;

/** The chained digest `side` knows at `seq`, if any. */
function digestAt(side: KeptHistory, seq: number): string | undefined {
  return side.records.get(seq)?.c ?? side.checkpoints.get(seq);
}

/** Whether record `own` at `seq`, which differs from the other side's batch there, also shows
 * (by its digest, given the other side's at `seq - 1`) that the histories differed before. */
function differedBefore(own: PositionRecord, seq: number, before: string | undefined): boolean {
  return own.c !== undefined && before !== undefined && chainDigest(before, seq, own.b) !== own.c;
}

/** The first confirmed position where the source or the log differs from the old store (see
 * the module comment), or undefined. Throws when a read of the log fails. */
export async function firstConfirmedMismatch(
  check: ConfirmedCheck,
): Promise<ConfirmedMismatch | undefined> {
  const { confirmed: upTo, mine, source, sourcePosition: from } = check;
  if (upTo <= 0) return undefined;
  // The source's own positions: its records, then its digest at the highest common position.
  const reached = Math.min(from, upTo);
  for (const seq of [...mine.records.keys()].filter((s) => s <= reached).sort((a, b) => a - b)) {
    const own = mine.records.get(seq)!;
    const theirs = source.records.get(seq)?.b;
    if (theirs === undefined || theirs === own.b) continue;
    const before = digestAt(source, seq - 1) ?? (seq === 1 ? CHAIN_START : undefined);
    if (differedBefore(own, seq, before)) {
      return { seq: seq - 1, mine: own.c!, theirs: digestAt(source, seq), chained: true };
    }
    return { seq, mine: own.b, theirs };
  }
  let common: number | undefined;
  for (const seq of new Set([...mine.records.keys(), ...mine.checkpoints.keys()])) {
    if (
      seq <= reached && (common === undefined || seq > common) &&
      digestAt(mine, seq) !== undefined && digestAt(source, seq) !== undefined
    ) common = seq;
  }
  const ownCommon = common === undefined ? undefined : digestAt(mine, common);
  if (common !== undefined && ownCommon !== digestAt(source, common)) {
    return { seq: common, mine: ownCommon!, theirs: digestAt(source, common), chained: true };
  }
  if (from >= upTo) return undefined;
  // The log after the source: each position against the old store's record, and the source's
  // digest extended over it against the old store's wherever it knows its own.
  let chain = from === 0 ? CHAIN_START : digestAt(source, from);
  let equal = from === 0 ? 0 : common;
  const range = () => (equal === undefined ? {} : { after: equal });
  for (let seq = from + 1; seq <= upTo; seq += READ_AT_ONCE) {
    const seqs = Array.from({ length: Math.min(READ_AT_ONCE, upTo - seq + 1) }, (_, i) => seq + i);
    const needed = chain !== undefined ? seqs : seqs.filter((s) => mine.records.has(s));
    const read = new Map<number, string | undefined>();
    await Promise.all(needed.map(async (s) => read.set(s, await check.read(s))));
    for (const s of seqs) {
      const theirs = read.get(s);
      const record = mine.records.get(s);
      if (record && theirs !== record.b) {
        if (differedBefore(record, s, chain)) {
          const digest = chainDigest(chain!, s, theirs);
          return { seq: s - 1, mine: record.c!, theirs: digest, chained: true, ...range() };
        }
        return { seq: s, mine: record.b, theirs };
      }
      if (chain === undefined) continue;
      chain = chainDigest(chain, s, theirs);
      const own = digestAt(mine, s);
      if (own !== undefined && own !== chain) {
        return { seq: s, mine: own, theirs: chain, chained: true, ...range() };
      }
      if (own !== undefined) equal = s;
    }
  }
  return undefined;
}
