/**
 * Test-time fault injection for clustered mode (`SWITCHBOARD_FAULT_*`): a wrapper around the
 * link through which the replicated store reads the log (`read`, `follow`, `subscribe`), put
 * there by `openCluster` only when one of the variables is set. It plays what a diverged NATS
 * replica or a lossy core NATS would do to one node:
 *
 * - `dropRate` (`SWITCHBOARD_FAULT_DROP_LOG_DELIVERY`): drops that share of the consumer's
 *   deliveries and of the writers' position announcements (the node must repair the gaps);
 * - `forkAt` (`SWITCHBOARD_FAULT_FORK_AT`): the message at that position is read as another one
 *   (`fork.ts`) while the node has neither stopped itself nor replaced its store;
 * - `otherAt` (`SWITCHBOARD_FAULT_OTHER_AT`): once the node stopped itself, the message at that
 *   position is read as another one for good (a stream leader whose replica rewrote history a
 *   majority confirmed);
 * - `deafAfter` (`SWITCHBOARD_FAULT_DEAF_AFTER`): the nodes' reports of positions past it are
 *   dropped until the node first stops itself (reports core NATS lost).
 */
import { Packr } from "msgpackr";
import { forkedWrites, type Write } from "./fork.ts";

/** What the replicated store reads the log through (the link, or this wrapper). */
export interface LogReader {
  read(seq: number): Promise<Uint8Array | null>;
  follow(start: number, fn: (seq: number, data: Uint8Array) => void): { stop(): void };
  subscribe(subject: string, fn: (data: Uint8Array, subject: string) => void): () => void;
}

/** The faults to play (0: none) and the subjects they act on. */
export interface Faults {
  dropRate: number;
  forkAt: number;
  otherAt: number;
  deafAfter: number;
  /** The writers' position announcements, and the nodes' reports of what they applied. */
  headSubject: string;
  appliedSubject: string;
}

/** What the wrapper watches of the store: whether it stopped itself, when it was rebuilt. */
export interface Watched {
  readonly stopped: boolean;
  onRebuilt(fn: () => void): void;
}

/** The replicated store's message codec and the fields a fault changes. */
const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);
type Message = { o: string; b: string; a?: string; w: Write[] };

/** See the module comment. */
export class FaultyLog implements LogReader {
  #forkAt: number;
  #deafAfter: number;
  #otherActive = false;
  #store: Watched | undefined;

  constructor(private link: LogReader, private faults: Faults) {
    this.#forkAt = faults.forkAt;
    this.#deafAfter = faults.deafAfter;
  }

  /** Starts watching `store` (the one reading through this wrapper). */
  watch(store: Watched): void {
    this.#store = store;
    // The fork plays one diverged replica once: the rebuild reads the leader again.
    store.onRebuilt(() => (this.#forkAt = 0));
  }

  /** Whether the store stopped itself; from its first stop on, `otherAt` plays and
   * `deafAfter` no longer does. */
  #stopped(): boolean {
    if (!this.#store?.stopped) return false;
    this.#otherActive = this.faults.otherAt > 0;
    this.#deafAfter = 0;
    return true;
  }

  async read(seq: number): Promise<Uint8Array | null> {
    const data = await this.link.read(seq);
    if (!data) return data;
    const stopped = this.#stopped();
    const other = this.#otherActive && seq === this.faults.otherAt;
    // A stopped node applies nothing: its reads then are its rebuild's, of the leader.
    if (!other && (stopped || seq !== this.#forkAt)) return data;
    const { a: _, ...msg } = codec.unpack(data) as Message;
    const b = `${other ? "other" : "fork"}-${seq}`;
    return codec.pack({ ...msg, o: "", b, w: forkedWrites(msg.w) });
  }

  follow(start: number, fn: (seq: number, data: Uint8Array) => void): { stop(): void } {
    return this.link.follow(start, (seq, data) => this.#dropped() || fn(seq, data));
  }

  subscribe(subject: string, fn: (data: Uint8Array, subject: string) => void): () => void {
    const { headSubject, appliedSubject } = this.faults;
    return this.link.subscribe(subject, (data, at) => {
      if (subject === headSubject && this.#dropped()) return;
      if (subject === appliedSubject && !this.#stopped() && this.#deafAfter > 0) {
        try {
          if ((codec.unpack(data) as { q: number }).q > this.#deafAfter) return;
        } catch { /* not a report: passed on */ }
      }
      fn(data, at);
    });
  }

  #dropped(): boolean {
    return this.faults.dropRate > 0 && Math.random() < this.faults.dropRate;
  }
}
