/**
 * The apply part of the replicated store: every node, the writer included, applies the log in
 * order, at each position the message read from the stream's leader (a publish ack, a
 * consumer's delivery, another node's announcement only say how far to read: a consumer lives
 * on any replica, and a replica may have diverged). Each run of messages is one local commit,
 * skipping write sets that read a key written after their `base` (`conflicts.ts`) or were
 * speculated on another history; it decides the batches written here and wakes the waits.
 */
import type { Key } from "lmdb";
import { asStorageError, StorageUnavailableError } from "../../store/errors.ts";
import { log } from "../../log/mod.ts";
import type { Divergence, PositionMark } from "../divergence/mod.ts";
import { BEHIND, codec, CONFLICT_WINDOW } from "./state.ts";
import type { LogMessage, Outcome, ReplicaState } from "./state.ts";

/** A catch-up is applied in slices bounded by messages, bytes and decoding time, the event
 * loop turning between them (`/readyz` is answered meanwhile). */
const MAX_APPLY = 128;
const MAX_APPLY_BYTES = 256 * 1024;
const MAX_APPLY_DECODE_MS = 10;
/** Log positions read from the stream at once, at most. */
const READ_AHEAD = 64;

/** A wait for a log position to be applied (or for a batch's outcome). */
interface Waiter {
  seq: number;
  outcome?: Outcome;
  wake: () => void;
}

/** See the module comment. */
export class Applier {
  #waiters: Waiter[] = [];
  #repairTimer: ReturnType<typeof setTimeout> | undefined;
  #consumer: { stop(): void } | undefined;
  /** The last position the consumer delivered, and for how many tail checks in a row it was
   * behind the position applied (a consumer served by a lagging replica). */
  #consumerSeq = 0;
  #consumerBehind = 0;
  /** Read failures (see `#readFailed`), and whether the last read found nothing yet. */
  #repairFailedAt = 0;
  #repairEmpty = false;
  /** Highest position known to exist that repair should reach. */
  #repairTarget = 0;

  /** The defence against a diverged replica (`../divergence/`), set by the store. */
  defence!: Divergence;

  constructor(private s: ReplicaState) {}

  /** (Re)starts the log consumer after the position applied. Its deliveries only say that a
   * position exists: the content is read from the stream's leader, alike for every node. */
  follow(): void {
    const s = this.s;
    this.#consumer?.stop();
    this.#consumerSeq = s.applied;
    this.#consumerBehind = 0;
    this.#consumer = s.log.follow(s.applied + 1, (seq) => {
      this.#consumerSeq = seq;
      this.hint(seq);
    });
  }

  /** Position `seq` exists (a delivery, an announcement): read up to it. */
  hint(seq: number): void {
    this.s.knownTail = Math.max(this.s.knownTail, seq);
    if (seq > this.s.applied) this.scheduleRepair(seq);
  }

  /** Stops reading the log (a node that stopped itself, a store being replaced, a close):
   * nothing read is applied; with `consumer`, the consumer stops too. */
  halt(consumer: boolean): void {
    if (consumer) {
      this.#consumer?.stop();
      this.#consumer = undefined;
    }
    clearTimeout(this.#repairTimer);
    this.#repairTimer = undefined;
    this.s.buffer.clear();
  }

  #feed(seq: number, data: Uint8Array): void {
    const s = this.s;
    if (s.replacing || s.diverged) return;
    if (seq <= s.applied || s.buffer.has(seq)) return;
    s.buffer.set(seq, data);
    void this.#drain();
  }

  async #drain(): Promise<void> {
    const s = this.s;
    if (s.applying || s.replacing) return;
    let done!: () => void;
    s.applying = new Promise((r) => (done = r));
    try {
      while (s.buffer.has(s.applied + 1) && !s.diverged) {
        const run: { seq: number; msg: LogMessage }[] = [];
        let bytes = 0;
        const t0 = performance.now();
        for (
          let q = s.applied + 1;
          s.buffer.has(q) && run.length < MAX_APPLY && bytes < MAX_APPLY_BYTES &&
          performance.now() - t0 < MAX_APPLY_DECODE_MS;
          q++
        ) {
          const data = s.buffer.get(q)!;
          bytes += data.byteLength;
          run.push({ seq: q, msg: codec.unpack(data) as LogMessage });
        }
        try {
          s.applyingRun = this.#apply(run);
          await s.applyingRun;
        } catch (err) {
          s.failing = err instanceof StorageUnavailableError ? err.reason : String(err);
          log.error("cluster apply failed; retrying", { error: String(err) });
          if (s.closed) break;
          await new Promise((r) => setTimeout(r, 500));
          continue;
        } finally {
          s.applyingRun = undefined;
        }
        for (const { seq } of run) s.buffer.delete(seq);
        // More to apply: let timers and requests run first (the position applied is already
        // recorded, so nothing waits on a half-applied run).
        if (s.buffer.has(s.applied + 1)) await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      s.applying = undefined;
      done();
    }
    if (s.buffer.size > 0) this.scheduleRepair();
  }

  /** Applies consecutive log messages in one local commit (skipping stale write sets), then
   * tells the hooks. */
  async #apply(run: { seq: number; msg: LogMessage }[]): Promise<void> {
    const s = this.s;
    const me = s.link.nodeId;
    const own = new Map<LogMessage, Outcome>();
    const fresh: { seq: number; msg: LogMessage }[] = [];
    const d = this.defence;
    const written: [number, [string, Key][], PositionMark][] = [];
    const before = s.applied;
    for (const item of run) {
      const { seq, msg } = item;
      // A batch id seen again (a retried publish stored twice) is skipped: its first
      // occurrence decided it.
      const id = msg.a ?? msg.b;
      const repeat = s.recent.repeated(id);
      const outcome = msg.o === me && !repeat ? s.awaiting.get(id) : undefined;
      if (outcome) {
        own.set(msg, outcome);
        outcome.applyAt = performance.now();
      }
      // A write set speculated on another history (its writer's fingerprint at `base` is not
      // ours) is skipped like a conflicting one, by every node that shares our history.
      const stale = repeat || d.otherBase(msg.base, msg.h) || s.recent.stale(msg.base, seq, msg.r);
      const keys: [string, Key][] = stale
        ? []
        : msg.w.filter((w) => !s.localDbs.has(w[1])).map((w) => [w[1], w[2]]);
      s.recent.record(seq, keys, id);
      written.push([seq, keys, d.add(seq, id, !stale)]);
      if (!stale) fresh.push(item);
      if (outcome) {
        outcome.done = stale ? "stale" : null;
        outcome.seq = seq;
      }
    }
    const remote = fresh.filter(({ msg }) => !own.has(msg)).flatMap(({ msg }) => msg.w);
    s.changes.applying(remote);
    const last = run[run.length - 1].seq;
    try {
      // One batch of lmdb-js's write thread: this thread only encodes; a synchronous commit
      // waited here for lock, disk and pages (50-150 ms per apply on a loaded machine). No
      // speculation runs while it is pending.
      const t0 = performance.now();
      let held = 0;
      await s.local.root.batch(() => {
        const c0 = performance.now();
        for (const { msg } of fresh) s.write(msg.w, msg.o === me);
        for (const [seq, keys, mark] of written) {
          s.recentDb.put(seq, { w: keys, ...mark });
          d.persist(seq, mark);
          if (seq - CONFLICT_WINDOW > 0) s.recentDb.remove(seq - CONFLICT_WINDOW);
        }
        s.positions.put("applied", last);
        held = performance.now() - c0;
      });
      const took = performance.now() - t0;
      if (held >= 50) {
        log.warn("cluster apply held the thread", { ms: Math.round(held), positions: run.length });
      }
      if (took >= 2000) {
        log.warn("cluster apply commit slow", { ms: Math.round(took), positions: run.length });
      }
    } catch (caught) {
      const err = await asStorageError(caught, s.path);
      s.recent.rollback(before);
      d.rollback(before);
      for (const o of own.values()) o.done = null;
      s.changes.applied(remote, false);
      throw err;
    }
    s.applied = last;
    s.lastApply = Date.now();
    s.knownTail = Math.max(s.knownTail, last);
    d.applied(last);
    for (const [msg, o] of own) {
      if (o.done === null && fresh.some((f) => f.msg === msg)) o.done = "applied";
    }
    s.changes.applied(remote, true);
    const due: Waiter[] = [];
    const waiting: Waiter[] = [];
    for (const w of this.#waiters) {
      (w.seq <= last || (w.outcome && w.outcome.done !== null) ? due : waiting).push(w);
    }
    this.#waiters = waiting;
    for (const w of due) w.wake();
  }

  /** Resolves true once position `seq` is applied here (or `outcome` is decided), false at
   * `deadline`. Fetches missing messages from the stream when they do not arrive on their own. */
  waitApplied(seq: number, deadline: number, outcome?: Outcome): Promise<boolean> {
    if (this.s.applied >= seq || (outcome && outcome.done !== null)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(false);
      }, Math.max(0, deadline - Date.now()));
      const waiter = {
        seq,
        outcome,
        wake: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.#waiters.push(waiter);
      this.scheduleRepair(seq);
    });
  }

  /** Reads the positions after the one applied, up to the highest known to exist (`upTo`, a
   * waiter's, a buffered one's), from the stream's leader, `READ_AHEAD` at a time. */
  scheduleRepair(upTo = 0): void {
    const s = this.s;
    this.#repairTarget = Math.max(this.#repairTarget, upTo);
    if (this.#repairTimer || s.closed || s.replacing || s.diverged) return;
    const pause = Date.now() - this.#repairFailedAt < 1000 ? 250 : this.#repairEmpty ? 20 : 0;
    this.#repairTimer = setTimeout(async () => {
      let want = this.#repairTarget;
      for (const w of this.#waiters) want = Math.max(want, w.seq);
      for (const q of s.buffer.keys()) want = Math.max(want, q);
      this.#repairEmpty = false;
      try {
        for (
          let from = s.applied + 1;
          from <= want && !s.closed && !this.#repairEmpty;
          from += READ_AHEAD
        ) {
          const seqs: number[] = [];
          for (let q = from; q <= Math.min(want, from + READ_AHEAD - 1); q++) {
            if (!s.buffer.has(q) && q > s.applied) seqs.push(q);
          }
          const read = await Promise.all(seqs.map((q) => s.log.read(q)));
          for (const [i, data] of read.entries()) {
            if (!data) {
              this.#repairEmpty = true; // not stored yet (a hint ahead of the leader)
              break;
            }
            this.#feed(seqs[i], data);
          }
        }
      } catch (err) {
        this.#readFailed(err);
      }
      this.#repairTimer = undefined;
      if (s.applied >= this.#repairTarget) this.#repairTarget = 0;
      if (this.#waiters.length > 0 || s.buffer.size > 0 || this.#repairTarget > s.applied) {
        this.scheduleRepair();
      }
    }, pause);
  }

  /** A read failed: logged once a second at most, retried after a pause, and reported to the
   * link with the last position known to exist (whether to leave the server is its call). */
  #readFailed(err: unknown): void {
    const s = this.s;
    const now = Date.now();
    if (now - this.#repairFailedAt > 1000) {
      log.warn("cluster repair read failed", { error: String(err) });
    }
    this.#repairFailedAt = now;
    s.link.readFailed(err, s.knownTail);
  }

  /** Compares with the log's bounds now and then: a dropped or delayed last message shows no
   * gap, a consumer may lag, the log may be compacted past this node. */
  async checkTail(): Promise<void> {
    const s = this.s;
    if (s.closed || !s.link.connected()) return;
    try {
      const { first, last } = await s.link.bounds();
      s.knownTail = Math.max(s.knownTail, last);
      // A consumer left behind the position applied for 3 checks in a row is re-created.
      this.#consumerBehind = this.#consumerSeq < s.applied ? this.#consumerBehind + 1 : 0;
      if (this.#consumerBehind >= 3 && !s.closed) {
        log.warn("cluster log consumer behind; re-creating it", {
          consumer: this.#consumerSeq,
          applied: s.applied,
        });
        this.follow();
      }
      if (first > s.applied + 1 && s.failing !== BEHIND) {
        s.failing = BEHIND;
        log.error(BEHIND, { applied: s.applied, log_first: first });
      }
      if (last > s.applied) this.scheduleRepair(last);
    } catch { /* the next check tries again */ }
  }
}
