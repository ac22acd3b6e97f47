/**
 * The check a rebuild (`rebuild.ts`) passes before it replaces a stopped node's store: the
 * positions up to the last one a majority of the nodes confirmed (`agreement.ts`
 * `confirmedUpTo`) are acknowledged history, so the state the node would end on must hold at
 * each of them the very batch its old store applied there. The rebuild source (a snapshot, or
 * the empty store at 0) holds the history up to its position, and the log (as the rebuild reads
 * it from the stream's leader) the positions after it. Equal batch ids at every position from
 * the same starting state give the same applied-or-skipped decisions, so batch ids are what is
 * compared, two ways:
 *
 * - position by position, where the old store keeps a record (`cluster:recent`: its last
 *   `CONFLICT_WINDOW` positions), against the source's own records or the log: this names the
 *   first differing position, unless the digest kept in the record shows that the histories
 *   differed before it already (the first differing record is the oldest one kept, and the
 *   positions between it and the last checkpoint are seen only through the digest): the
 *   difference then lies at or before the position below it;
 * - by the chained digest of the whole history (`fingerprint.ts` `chainDigest`), kept with each
 *   record and, every `CHAIN_CHECKPOINT_EVERY` positions, for good (`cluster:chain`): the
 *   source's digest (at its position, or at a position both keep when the source is past the
 *   confirmed one) is extended over the log up to the confirmed position and compared with the
 *   old store's wherever it knows its own, so a difference however old is seen.
 *
 * A store (or snapshot) written by a version without the digest keeps none; the check then
 * compares the records alone (the last `CONFLICT_WINDOW` positions).
 */
import { CHAIN_START, chainDigest } from "./fingerprint.ts";

/** Every this many positions each store keeps its chained digest for good (`cluster:chain`). */
export const CHAIN_CHECKPOINT_EVERY = 4096;

/** Where the history the rebuild would end on differs from the confirmed one. */
export interface ConfirmedMismatch {
  /** The first differing position (`chained`: the difference lies at or before it). */
  seq: number;
  /** The batch id the old store applied there (when `chained`: its chained digest there, or
   * at `seq + 1` when the records differ there and the digest shows an earlier difference). */
  mine: string;
  /** What the source or the log holds there (`undefined`: nothing); a digest when `chained`. */
  theirs: string | undefined;
  chained?: true;
  /** With `chained`: the last position at which the check saw both histories equal (their
   * digests, or the rebuild source's position), when known: the difference lies after it. */
  after?: number;
}

/** What a store keeps of one position: the batch id, and the chained digest when it has one. */
export interface PositionRecord {
  b: string;
  c?: string;
}

/** One side's history as its store keeps it. */
export interface KeptHistory {
  /** Per-position records (the positions the store keeps). */
  records: Map<number, PositionRecord>;
  /** Chained digests kept for good, by position. */
  checkpoints: Map<number, string>;
}

/** What the check needs. */
export interface ConfirmedCheck {
  /** The last position a majority confirmed (0: none, nothing to check). */
  confirmed: number;
  /** The old store's history. */
  mine: KeptHistory;
  /** The rebuild source's position (the log is replayed after it). */
  sourcePosition: number;
  /** The source's own history (empty for the empty store). */
  source: KeptHistory;
  /** The batch id the log holds at `seq` (undefined when it holds nothing there). */
  read(seq: number): Promise<string | undefined>;
}

/** Positions read from the log at once, at most. */
const READ_AT_ONCE = 64;

/** The chained digest `side` knows at `seq`, if any. */
function digestAt(side: KeptHistory, seq: number): string | undefined {
  return side.records.get(seq)?.c ?? side.checkpoints.get(seq);
}

/**
 * When the old store's record `own` at `seq` differs from the other side's batch there: whether
 * its chained digest shows that the histories differed before `seq` already, given the other
 * side's digest at `seq - 1` (`before`; undefined when unknown): the digest the old store would
 * hold at `seq` had it shared that history up to `seq - 1` is not the one it holds.
 */
function differedBefore(own: PositionRecord, seq: number, before: string | undefined): boolean {
  return own.c !== undefined && before !== undefined && chainDigest(before, seq, own.b) !== own.c;
}

/**
 * The first confirmed position where the source or the log holds another batch than the old
 * store applied (see the module comment), or undefined when there is none. Throws when a read
 * of the log fails (the rebuild is then tried again later).
 */
export async function firstConfirmedMismatch(
  check: ConfirmedCheck,
): Promise<ConfirmedMismatch | undefined> {
  const { confirmed: upTo, mine, source, sourcePosition: from } = check;
  if (upTo <= 0) return undefined;
  // Positions the source reaches: its records, and its digest at the highest position at or
  // below the confirmed one that both sides know.
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
  const known = new Set([...mine.records.keys(), ...mine.checkpoints.keys()]);
  let common: number | undefined;
  for (const seq of known) {
    if (
      seq <= reached && (common === undefined || seq > common) &&
      digestAt(mine, seq) !== undefined && digestAt(source, seq) !== undefined
    ) common = seq;
  }
  if (common !== undefined && digestAt(mine, common) !== digestAt(source, common)) {
    return {
      seq: common,
      mine: digestAt(mine, common)!,
      theirs: digestAt(source, common),
      chained: true,
    };
  }
  if (from >= upTo) return undefined;
  // The positions after the source, read from the log: each compared with the old store's
  // record there, and the source's digest (when it has one at its position) extended over
  // them and compared wherever the old store knows its own.
  let chain = from === 0 ? CHAIN_START : digestAt(source, from);
  // The last position at which both histories were seen equal: the common digest above, or
  // the empty store's start (a source's own history before its position is seen only there).
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
        // The oldest record kept (or one after a gap) may differ only because the history
        // before it, seen through the digest alone, already did: named as such.
        if (differedBefore(record, s, chain)) {
          return {
            seq: s - 1,
            mine: record.c!,
            theirs: chainDigest(chain!, s, theirs),
            chained: true,
            ...range(),
          };
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
      // Nothing there (the log ends before the confirmed position): the record check above
      // names it when the old store keeps a record; else the digest further on differs.
    }
  }
  return undefined;
}
