/**
 * Whether the other nodes applied the log as this node did: each node reports, after each
 * local commit, the fingerprint (`fingerprint.ts`) at the position it reached; this module
 * compares the reports with this node's own fingerprints. A write is acknowledged only once
 * enough other nodes reached its position with the same fingerprint that, with this one, they
 * are a majority of the cluster's members (live or not: a node cut off still counts), so an
 * acknowledged write is applied alike on a majority even when a NATS replica diverged and fed
 * some node other messages. A node that a majority of the members disagree with applied
 * another history: it stops taking writes (`onDiverged`) and says so in its reports; the others
 * no longer count its agreement until it reports without saying so (it rebuilt its store from
 * the log, `rebuild.ts`, and is judged afresh: `reset`).
 */
import { log } from "../log/mod.ts";

/** Reports kept per peer until this node reaches their position. */
const MAX_PENDING = 256;

/** See the module comment. */
export class PeerAgreement {
  #me: string;
  #mine: (seq: number) => string | undefined;
  #onDiverged: (seq: number, peers: string[]) => void;
  #members: () => string[] = () => [];
  #applied = 0;
  #pending = new Map<string, { seq: number; print: string }[]>();
  /** Each peer's latest report (judged again after a `reset`). */
  #latest = new Map<string, { seq: number; print: string }>();
  /** The highest position at which each peer agreed, and whether its last report disagreed
   * (and where). */
  #agreedUpTo = new Map<string, number>();
  #disagrees = new Map<string, number>();
  #waiters: { seq: number; wake: () => void }[] = [];
  /** Peers that said they diverged, and whether this node did. */
  #diverged = new Set<string>();
  #selfDiverged = false;

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
    this.#wakeConfirmed();
  }

  /** Other nodes whose agreement an acknowledgement needs (with this one: a majority). */
  needed(): number {
    return (this.#peers().length + 1) >> 1;
  }

  /** A peer's report: it applied the log up to `seq`, with fingerprint `print` there
   * (`diverged`: it found itself applying another history than the others). */
  report(node: string, seq: number, print: string, diverged = false): void {
    if (node === this.#me) return;
    // A node that rebuilt its store reports without the flag again and counts again.
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

  /** Whether this node found itself applying another history than the majority. */
  get selfDiverged(): boolean {
    return this.#selfDiverged;
  }

  /**
   * This node replaced its store (rebuilt at position `applied`, `rebuild.ts`): forgets what it
   * judged before and judges the peers' latest reports again as it reaches their positions.
   */
  reset(applied: number): void {
    this.#selfDiverged = false;
    this.#applied = applied;
    this.#agreedUpTo.clear();
    this.#disagrees.clear();
    this.#pending = new Map([...this.#latest].map(([node, report]) => [node, [report]]));
  }

  /** What this node's agreement with the others depends on besides its own history: the
   * members, and each peer's latest report (its position, fingerprint there, and whether it
   * said it diverged), as one string (equal strings: nothing of it changed). */
  inputs(): string {
    return JSON.stringify(
      this.#peers().sort().map((p) => [p, this.#latest.get(p) ?? null, this.#diverged.has(p)]),
    );
  }

  /** The highest position up to which a majority of the members (this node included) applied
   * the log alike, as far as their reports showed (0 when none is known). */
  confirmedUpTo(): number {
    const needed = this.needed();
    if (needed === 0) return this.#applied;
    const agreed = this.#peers()
      .filter((p) => !this.#diverged.has(p))
      .map((p) => Math.min(this.#agreedUpTo.get(p) ?? 0, this.#applied))
      .sort((a, b) => b - a);
    return agreed[needed - 1] ?? 0;
  }

  /** Resolves true once enough peers agree up to `seq` (or none is needed), false at
   * `deadline` or once this node found it diverged. */
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
    const needed = this.needed();
    let agree = 0;
    for (const peer of this.#peers()) {
      if (!this.#diverged.has(peer) && (this.#agreedUpTo.get(peer) ?? 0) >= seq) agree++;
    }
    return agree >= needed;
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
    this.#wakeConfirmed();
    const peers = this.#peers();
    const against = peers.filter((p) => this.#disagrees.has(p));
    if (!this.#selfDiverged && against.length * 2 > peers.length + 1) {
      this.#selfDiverged = true;
      this.#onDiverged(Math.min(...against.map((p) => this.#disagrees.get(p)!)), against);
      this.#wakeConfirmed();
    }
  }

  #wakeConfirmed(): void {
    for (const w of this.#waiters.slice()) {
      if (this.#selfDiverged || this.#confirmed(w.seq)) w.wake();
    }
  }
}
