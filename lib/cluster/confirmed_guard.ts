/**
 * The check a rebuild (`rebuild.ts`) passes before it replaces a stopped node's store: the
 * positions up to the last one a majority of the nodes confirmed (`agreement.ts`
 * `confirmedUpTo`) are acknowledged history, so the state the node would end on must hold at
 * each of them the very batch its old store applied there. The rebuild source (a snapshot)
 * keeps its own per-position records for its recent positions, and the log (as the rebuild
 * reads it from the stream's leader) holds the positions after the source: both are compared
 * with the old store's records (`cluster:recent`, the positions it keeps: the last
 * `CONFLICT_WINDOW`). Equal batch ids at every position from the same starting state give the
 * same applied-or-skipped decisions, so the batch ids are what is compared.
 */

/** Where the history the rebuild would end on differs from the confirmed one. */
export interface ConfirmedMismatch {
  seq: number;
  /** The batch id the old store applied there. */
  mine: string;
  /** What the source or the log holds there (`undefined`: nothing). */
  theirs: string | undefined;
}

/** What the check needs. */
export interface ConfirmedCheck {
  /** The last position a majority confirmed (0: none, nothing to check). */
  confirmed: number;
  /** The old store's per-position batch ids, for the positions it keeps. */
  mine: Map<number, string>;
  /** The rebuild source's position (the log is replayed after it). */
  sourcePosition: number;
  /** The source's own per-position batch ids (a snapshot's recent positions; empty for the
   * empty store). */
  source: Map<number, string>;
  /** The batch id the log holds at `seq` (undefined when it holds nothing there). */
  read(seq: number): Promise<string | undefined>;
}

/** Positions read from the log at once, at most. */
const READ_AT_ONCE = 64;

/**
 * The first confirmed position (that the old store keeps a record of) where the source or the
 * log holds another batch than the old store applied, or undefined when there is none. Throws
 * when a read of the log fails (the rebuild is then tried again later).
 */
export async function firstConfirmedMismatch(check: ConfirmedCheck): Promise<ConfirmedMismatch | undefined> {
  const positions = [...check.mine.keys()].filter((s) => s <= check.confirmed).sort((a, b) => a - b);
  for (const seq of positions) {
    if (seq > check.sourcePosition) break;
    const theirs = check.source.get(seq);
    // A snapshot keeps records of its last positions only; older ones are not compared.
    if (theirs !== undefined && theirs !== check.mine.get(seq)) return { seq, mine: check.mine.get(seq)!, theirs };
  }
  const fromLog = positions.filter((s) => s > check.sourcePosition);
  for (let i = 0; i < fromLog.length; i += READ_AT_ONCE) {
    const seqs = fromLog.slice(i, i + READ_AT_ONCE);
    const read = await Promise.all(seqs.map((s) => check.read(s)));
    for (const [j, theirs] of read.entries()) {
      const mine = check.mine.get(seqs[j])!;
      if (theirs !== mine) return { seq: seqs[j], mine, theirs };
    }
  }
  return undefined;
}
