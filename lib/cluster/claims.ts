/**
 * What the other nodes say a majority confirmed. A node knows a position is confirmed only
 * from the reports it received (`agreement.ts`), and core NATS drops reports (a node on a
 * frozen server misses them): in a nemesis run one node acknowledged writes up to position
 * 37260 on another node's matching reports, while that other node, which missed the first
 * one's reports, knew only of 35279 as confirmed; when JetStream's replicas then rewrote the
 * log from 35280 on, that node's rebuild guard (`confirmed_guard.ts`) let it rebuild onto the
 * rewritten log, and it served a history without those acknowledged writes.
 *
 * So each node's heartbeat claims the position it knows a majority confirmed with its chained
 * digest there (`fingerprint.ts` `chainDigest`: the whole history up to it), and every node
 * judges each claim against its own digest at that position, now or once it applied that far:
 * - equal: its history up to there is the confirmed one (`learned`), which its rebuild guard
 *   then protects even though its own reports never showed it;
 * - different: it applied another history than one a majority confirmed (`contradicted`), and
 *   stops like a node the majority disagrees with.
 * A claim older than the digests this node keeps cannot be judged and is dropped.
 */

/** A heartbeat's claim: a majority confirmed the history with chained digest `chain` up to
 * position `at`. */
export interface Claim {
  at: number;
  chain: string;
}

/** How a claim was judged: this node's history is the confirmed one up to `at`, or it is not
 * (`node` claimed it). */
export type Verdict = { kind: "learned"; at: number } | {
  kind: "contradicted";
  at: number;
  node: string;
};

/** See the module comment. */
export class ConfirmedClaims {
  #chainAt: (seq: number) => string | undefined;
  #applied: () => number;
  /** Each node's latest claim past the position applied here, judged once it is reached. */
  #waiting = new Map<string, Claim>();
  #learned = 0;

  /** `chainAt`: this node's chained digest at a position it applied (undefined when it no
   * longer keeps it); `applied`: the position it applied. */
  constructor(chainAt: (seq: number) => string | undefined, applied: () => number) {
    this.#chainAt = chainAt;
    this.#applied = applied;
  }

  /** The highest position at which a claim matched this node's history (0: none). */
  get learned(): number {
    return this.#learned;
  }

  /** `node` claims `claim`: judged now when this node applied that far, else kept until it
   * has (`reached`). */
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
