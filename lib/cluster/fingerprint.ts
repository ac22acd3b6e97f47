/**
 * The fingerprint of the log's recent history as one node applied it: at each position, a
 * hash of what the last `window` positions held (each one's batch id, and whether it was
 * applied or skipped as stale). Two nodes that applied the same messages the same way have the
 * same fingerprint at every position; a node that read another message somewhere in the window
 * (a NATS replica that diverged from the others) has a different one. No common starting point
 * is needed: a restarted or restored node rebuilds it from the positions its store keeps.
 *
 * Also the chained digest of the whole history (`chainDigest`), which a rebuild compares with
 * the confirmed history of a stopped node's store.
 */

/** What position `seq` held, as the fingerprint sees it. */
export function positionDigest(batch: string | undefined, applied: boolean): string {
  return `${batch ?? ""}${applied ? "" : "!"}`;
}

/** Two 32-bit FNV-1a hashes (different offset bases) of `seq` and `digest`. */
function hashPosition(seq: number, digest: string): [number, number] {
  const s = `${seq}\n${digest}`;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return [a >>> 0, b >>> 0];
}

const hex = (n: number) => n.toString(16).padStart(8, "0");

/** The chained digest before position 1 (the empty store). */
export const CHAIN_START = "";

/**
 * The chained digest of the whole history up to `seq`: a hash of the digest at `seq - 1`
 * (`CHAIN_START` before position 1) and the batch id position `seq` held. Two stores that
 * applied the same batch ids at every position up to `seq` hold the same digest there, however
 * long ago a difference lies (the window fingerprint above forgets it after `window`
 * positions); from the same batch ids every node makes the same applied-or-skipped decisions,
 * so the ids alone are chained, and the digest can be extended from messages read from the log
 * (`confirmed_guard.ts`).
 */
export function chainDigest(previous: string, seq: number, batch: string | undefined): string {
  const [a, b] = hashPosition(seq, `${previous}\n${batch ?? ""}`);
  return hex(a) + hex(b);
}

/** See the module comment: an XOR of per-position hashes over a sliding window. */
export class WindowFingerprint {
  readonly window: number;
  #parts = new Map<number, [number, number]>();
  #a = 0;
  #b = 0;
  /** The fingerprint at each recent position. */
  #at = new Map<number, string>();
  #last = 0;
  /** The first position whose fingerprint is known here: rebuilt from a store that kept
   * positions from `p` on (after a restart), the fingerprints before `p + window - 1` lack the
   * positions before `p` and are not the ones the other nodes hold. */
  #known = 0;

  /** `stored`: the store's recent positions, oldest first (their digests). */
  constructor(window: number, stored: Iterable<[number, string]> = []) {
    this.window = window;
    let first = 0;
    for (const [seq, digest] of stored) {
      first ||= seq;
      this.add(seq, digest);
    }
    if (first > 1) this.#known = first + window - 1;
  }

  /** Adds position `seq` (the next one) and returns the fingerprint there. */
  add(seq: number, digest: string): string {
    const part = hashPosition(seq, digest);
    this.#xor(part);
    this.#parts.set(seq, part);
    const old = this.#parts.get(seq - this.window);
    if (old) this.#xor(old);
    const print = hex(this.#a) + hex(this.#b);
    this.#at.set(seq, print);
    this.#at.delete(seq - this.window);
    // Parts a little older than the window stay, for a rollback.
    this.#parts.delete(seq - 2 * this.window);
    this.#last = seq;
    return print;
  }

  /** The fingerprint at `seq`, when it is recent enough to be known here. */
  at(seq: number): string | undefined {
    return seq < this.#known ? undefined : this.#at.get(seq);
  }

  /** Forgets the positions after `seq` (their commit failed; they will be added again). */
  rollback(seq: number): void {
    for (let s = this.#last; s > seq; s--) {
      const part = this.#parts.get(s);
      if (!part) continue;
      this.#xor(part);
      const old = this.#parts.get(s - this.window);
      if (old) this.#xor(old);
      this.#parts.delete(s);
      this.#at.delete(s);
    }
    this.#last = Math.min(this.#last, seq);
  }

  #xor([a, b]: [number, number]): void {
    this.#a = (this.#a ^ a) >>> 0;
    this.#b = (this.#b ^ b) >>> 0;
  }
}
