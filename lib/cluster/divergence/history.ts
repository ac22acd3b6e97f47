/**
 * How a node's history is compared with the others' (docs/cluster-internals.md, "Replica
 * divergence"): the window fingerprint each node reports after each commit, the chained digest
 * of the whole history, and the heartbeats' claims of what a majority confirmed.
 */

/** What position `seq` held, as the fingerprint sees it: its batch id, and `!` when skipped. */
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
 * The chained digest of the history up to `seq`: a hash of the digest at `seq - 1` and the
 * batch id at `seq`. Equal digests mean equal batch ids at every position, however long ago a
 * difference lies; equal ids from the same start give the same applied-or-skipped decisions, so
 * the ids alone are chained and the digest extends over messages read from the log.
 */
export function chainDigest(previous: string, seq: number, batch: string | undefined): string {
  const [a, b] = hashPosition(seq, `${previous}\n${batch ?? ""}`);
  return hex(a) + hex(b);
}

/**
 * The fingerprint at each position: an XOR of the hashes of the last `window` positions'
 * digests. Nodes that applied the same messages alike hold the same one; no common start is
 * needed, a restarted node rebuilds it from the positions its store keeps.
 */
export class WindowFingerprint {
  readonly window: number;
  #parts = new Map<number, [number, number]>();
  #a = 0;
  #b = 0;
  #at = new Map<number, string>();
  #last = 0;
  /** The first position whose fingerprint is known: one rebuilt from positions `p` on lacks
   * those before `p` until `p + window - 1`. */
  #known = 0;

  /** `stored`: the store's recent positions and their digests, oldest first. */
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
    this.#parts.delete(seq - 2 * this.window); // kept a window longer, for a rollback
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

/** A heartbeat's claim: a majority confirmed the history with chained digest `chain` up to
 * position `at`. */
export interface Claim {
  at: number;
  chain: string;
}

/** A claim judged: this history is the confirmed one up to `at`, or `node` says it is not. */
export type Verdict = { kind: "learned"; at: number } | {
  kind: "contradicted";
  at: number;
  node: string;
};

/**
 * The other nodes' claims of what a majority confirmed, judged against this node's chained
 * digest now or once it applied that far. Core NATS drops reports, so a node may know less
 * confirmed than the others (a nemesis run rebuilt onto a log that lost writes acknowledged on
 * reports it missed): a matching claim is `learned` (the rebuild guard protects it), a
 * differing one `contradicted` (this node stops). A claim older than the digests kept is dropped.
 */
export class ConfirmedClaims {
  #chainAt: (seq: number) => string | undefined;
  #applied: () => number;
  /** Each node's latest claim past the position applied, judged once it is reached. */
  #waiting = new Map<string, Claim>();
  #learned = 0;

  /** `chainAt`: the chained digest at a position applied (undefined: not kept). */
  constructor(chainAt: (seq: number) => string | undefined, applied: () => number) {
    this.#chainAt = chainAt;
    this.#applied = applied;
  }

  /** The highest position at which a claim matched this node's history (0: none). */
  get learned(): number {
    return this.#learned;
  }

  /** `node` claims `claim`: judged now, or kept until this node applied that far. */
  hear(node: string, claim: Claim): Verdict | undefined {
    if (claim.at <= 0) return undefined;
    if (claim.at > this.#applied()) {
      this.#waiting.set(node, claim);
      return undefined;
    }
    this.#waiting.delete(node);
    return this.#judge(node, claim);
  }

  /** This node applied further: the waiting claims it reached, judged. */
  reached(): Verdict[] {
    const verdicts: Verdict[] = [];
    for (const [node, claim] of this.#waiting) {
      if (claim.at > this.#applied()) continue;
      this.#waiting.delete(node);
      const verdict = this.#judge(node, claim);
      if (verdict) verdicts.push(verdict);
    }
    return verdicts;
  }

  /** This node replaced its store: what it learned of the old one no longer holds. */
  reset(): void {
    this.#learned = 0;
    this.#waiting.clear();
  }

  #judge(node: string, claim: Claim): Verdict | undefined {
    const mine = this.#chainAt(claim.at);
    if (mine === undefined) return undefined;
    if (mine !== claim.chain) return { kind: "contradicted", at: claim.at, node };
    if (claim.at <= this.#learned) return undefined;
    this.#learned = claim.at;
    return { kind: "learned", at: claim.at };
  }
}
