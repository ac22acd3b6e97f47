/**
 * Whether the other nodes applied the log as this node did: each reports its fingerprint
 * (`history.ts`) at the position it reached, compared here with this node's. A write is
 * acknowledged once enough peers match it there to make, with this node, a majority of the
 * members (live or not). A node a majority disagrees with stops (`onDiverged`) and says so in
 * its reports; the others ignore its agreement until it reports without the flag (rebuilt).
 */
import { log } from "../../log/mod.ts";

/** Reports kept per peer until this node reaches their position. */
const MAX_PENDING = 256;

type Report = { seq: number; print: string };

/** See the module comment. */
export class PeerAgreement {
  #me: string;
  #mine: (seq: number) => string | undefined;
  #onDiverged: (seq: number, peers: string[]) => void;
  #members: () => string[] = () => [];
  #applied = 0;
  #pending = new Map<string, Report[]>();
  /** Each peer's latest report (judged again after a `reset`). */
  #latest = new Map<string, Report>();
  /** Per peer: the highest position it agreed at, and where its last report disagreed. */
  #agreedUpTo = new Map<string, number>();
  #disagrees = new Map<string, number>();
  #waiters: { seq: number; wake: () => void }[] = [];
  /** Peers that say they diverged. */
  #diverged = new Set<string>();
  #selfDiverged = false;

  /** `mine`: this node's fingerprint at a position; `onDiverged`: a majority disagrees. */
  constructor(
    me: string,
    mine: (seq: number) => string | undefined,
    onDiverged: (seq: number, peers: string[]) => void,
  ) {
    this.#me = me;
    this.#mine = mine;
    this.#onDiverged = onDiverged;
  }

  /** Where the cluster's members (this node included) come from; until set, it is alone. */
  useMembers(members: () => string[]): void {
    this.#members = members;
    this.#wake();
  }

  /** Other nodes whose agreement an acknowledgement needs (with this one: a majority). */
  needed(): number {
    return (this.#peers().length + 1) >> 1;
  }

  /** A peer applied the log up to `seq`, with fingerprint `print` there (`diverged`: it found
   * itself on another history). */
  report(node: string, seq: number, print: string, diverged = false): void {
    if (node === this.#me) return;
    if (diverged) this.#diverged.add(node);
    else this.#diverged.delete(node);
    this.#latest.set(node, { seq, print });
    const list = this.#pending.get(node) ?? [];
    list.push({ seq, print });
    if (list.length > MAX_PENDING) list.shift();
    this.#pending.set(node, list);
    this.#judge();
  }

  /** This node has applied up to `seq`: the reports up to there can be judged. */
  applied(seq: number): void {
    this.#applied = seq;
    this.#judge();
  }

  /** Whether a majority disagrees with this node's history. */
  get selfDiverged(): boolean {
    return this.#selfDiverged;
  }

  /** This node replaced its store (at `applied`): the peers' latest reports are judged afresh. */
  reset(applied: number): void {
    this.#selfDiverged = false;
    this.#applied = applied;
    this.#agreedUpTo.clear();
    this.#disagrees.clear();
    this.#pending = new Map([...this.#latest].map(([node, report]) => [node, [report]]));
  }

  /** The members and each peer's latest report and flag, as one string (equal: unchanged). */
  inputs(): string {
    return JSON.stringify(
      this.#peers().sort().map((p) => [p, this.#latest.get(p) ?? null, this.#diverged.has(p)]),
    );
  }

  /** The highest position up to which a majority (this node included) applied the log alike,
   * as far as reports showed (0: none known). */
  confirmedUpTo(): number {
    const needed = this.needed();
    if (needed === 0) return this.#applied;
    const agreed = this.#peers()
      .filter((p) => !this.#diverged.has(p))
      .map((p) => Math.min(this.#agreedUpTo.get(p) ?? 0, this.#applied))
      .sort((a, b) => b - a);
    return agreed[needed - 1] ?? 0;
  }

  /** Resolves true once enough peers agree up to `seq`, false at `deadline` or once this node
   * found it diverged. */
  wait(seq: number, deadline: number): Promise<boolean> {
    if (this.#confirmed(seq)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { seq, wake: () => finish(true) };
      // Re-checked now and then: the members change.
      const poll = setInterval(() => this.#confirmed(seq) && finish(true), 250);
      const timer = setTimeout(() => finish(false), Math.max(0, deadline - Date.now()));
      const finish = (ok: boolean) => {
        clearInterval(poll);
        clearTimeout(timer);
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(ok && !this.#selfDiverged);
      };
      this.#waiters.push(waiter);
    });
  }

  #peers(): string[] {
    const members = new Set(this.#members());
    for (const node of this.#pending.keys()) members.add(node);
    members.delete(this.#me);
    return [...members];
  }

  #confirmed(seq: number): boolean {
    if (this.#selfDiverged) return false;
    let agree = 0;
    for (const peer of this.#peers()) {
      if (!this.#diverged.has(peer) && (this.#agreedUpTo.get(peer) ?? 0) >= seq) agree++;
    }
    return agree >= this.needed();
  }

  #judge(): void {
    for (const [node, list] of this.#pending) {
      while (list.length > 0 && list[0].seq <= this.#applied) {
        const { seq, print } = list.shift()!;
        const mine = this.#mine(seq);
        if (mine === undefined) continue; // too old to compare
        if (mine === print) {
          this.#agreedUpTo.set(node, Math.max(this.#agreedUpTo.get(node) ?? 0, seq));
          this.#disagrees.delete(node);
        } else {
          if (!this.#disagrees.has(node)) {
            log.warn("cluster node applied the log differently", { peer: node, position: seq });
          }
          this.#disagrees.set(node, seq);
        }
      }
    }
    this.#wake();
    const peers = this.#peers();
    const against = peers.filter((p) => this.#disagrees.has(p));
    if (!this.#selfDiverged && against.length * 2 > peers.length + 1) {
      this.#selfDiverged = true;
      this.#onDiverged(Math.min(...against.map((p) => this.#disagrees.get(p)!)), against);
      this.#wake();
    }
  }

  #wake(): void {
    for (const w of this.#waiters.slice()) {
      if (this.#selfDiverged || this.#confirmed(w.seq)) w.wake();
    }
  }
}
