/**
 * Sends the deliveries of a durable outbox in the background, with retries, one lane per
 * receiver (an app's webhook URL, a bot). Each delivery keeps its own schedule: after a failed
 * attempt its next one is due `retryDelaysMs[attempt]` after that attempt's answer, and after
 * the last it is given up (counted per app and receiver, see `record.webhookGivenUp`). Nothing
 * another delivery does brings an attempt forward.
 *
 * Each lane has its own concurrency (`concurrency` attempts at once) and its own pause: after a
 * failed attempt the lane pauses (0.1 s, doubling with each failure in a row, at most 10 s), and
 * a success ends the pause. A pause holds a due delivery at most the pause's length past its due
 * time (a delivery due at `d` starts at `max(d, min(pausedUntil, d + pause))`), so a retry is
 * never more than 10 s late for it; a success never makes a waiting retry due earlier. Lanes
 * keep a dead or hanging receiver from delaying another receiver's deliveries.
 *
 * Each attempt's answer is `delivered` (forgotten), `retry` (moved to its next attempt, or given
 * up after the last) or `drop` (forgotten: its target is gone). Shared by chat bot webhooks and
 * Pusher-style channel webhooks. The clock is injectable (`SenderOptions.clock`) for tests.
 */
import process from "node:process";
import { record } from "../metrics/mod.ts";
import { errorFields, log } from "../log/mod.ts";
import type { OutboxEntry, OutboxMeta, WebhookOutbox } from "./outbox.ts";

/** Default waits between attempts: 9 attempts, given up about 73 minutes after the first. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 30_000, 120_000, 600_000, 3_600_000];

/**
 * The waits between attempts: `SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS` (comma-separated
 * milliseconds, e.g. `50,50` for three attempts; for tests and drills) when set and valid, else
 * `RETRY_DELAYS_MS`.
 */
export function retryDelays(): number[] {
  const raw = process.env.SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS;
  if (!raw) return RETRY_DELAYS_MS;
  const list = raw.split(",").map((s) => Number(s.trim()));
  return list.length > 0 && list.length <= 100 &&
      list.every((n) => Number.isSafeInteger(n) && n >= 0 && n <= 86_400_000)
    ? list
    : RETRY_DELAYS_MS;
}

/** Attempts in flight per lane, by default. */
const CONCURRENCY = 4;
/** A failing lane's pause: this after the first failure, doubling, at most `MAX_PAUSE_MS`. */
export const FIRST_PAUSE_MS = 100;
/** The longest pause: no due delivery waits longer than this for its lane's pause. */
export const MAX_PAUSE_MS = 10_000;

/** Time and timers; the real ones by default, a fake one in tests. */
export interface Clock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** The real clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Sender settings. */
export interface SenderOptions<T = OutboxEntry> {
  /** Waits before the 2nd, 3rd, ... attempt; after the last, the delivery is given up. */
  retryDelaysMs?: number[];
  /** Per-attempt timeout. Default 10 000 ms. */
  timeoutMs?: number;
  /** Attempts in flight per lane. Default 4. */
  concurrency?: number;
  /** The receiver a given-up delivery is counted under (its URL); default: its lane. */
  receiverOf?: (item: T) => string;
  /** Time and timers of the schedule (due times, pauses); default the real clock. */
  clock?: Clock;
}

/** One attempt: POST to `url` and report whether the target accepted it. */
export type Deliver<T> = (item: T, signal: AbortSignal) => Promise<"delivered" | "retry" | "drop">;

/** A min-heap of deliveries by due time. */
class DueHeap {
  #items: { dueAt: number; seq: number }[] = [];
  get size(): number {
    return this.#items.length;
  }
  peek(): { dueAt: number; seq: number } | undefined {
    return this.#items[0];
  }
  push(dueAt: number, seq: number): void {
    const a = this.#items;
    a.push({ dueAt, seq });
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (before(a[p], a[i])) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): { dueAt: number; seq: number } | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      for (let i = 0;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && before(a[l], a[m])) m = l;
        if (r < a.length && before(a[r], a[m])) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
  drain(): number[] {
    const seqs = this.#items.map((e) => e.seq);
    this.#items = [];
    return seqs;
  }
}

/** Heap order: due time, then age (seq). */
function before(a: { dueAt: number; seq: number }, b: { dueAt: number; seq: number }): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq <= b.seq);
}

/** The deliveries of one receiver. */
interface Lane {
  name: string;
  /** Every delivery of the lane not in flight, by due time. */
  queue: DueHeap;
  inFlight: number;
  failures: number;
  /** The current pause's length (0: none). */
  pauseMs: number;
  pausedUntil: number;
  timer?: unknown;
  timerAt: number;
  scheduled: boolean;
}

/** See the module comment. */
export class OutboxSender<T extends OutboxEntry> {
  #outbox: WebhookOutbox<T>;
  #deliver: Deliver<T>;
  #delays: number[];
  #timeoutMs: number;
  #concurrency: number;
  #receiverOf: (item: T, lane: string) => string;
  #clock: Clock;
  #lanes = new Map<string, Lane>();
  #aborts = new Set<AbortController>();
  #closed = false;

  /** Starts sending whatever the outbox holds (from before a restart too). */
  constructor(outbox: WebhookOutbox<T>, deliver: Deliver<T>, opts: SenderOptions<T> = {}) {
    this.#outbox = outbox;
    this.#deliver = deliver;
    this.#delays = opts.retryDelaysMs ?? retryDelays();
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#concurrency = opts.concurrency ?? CONCURRENCY;
    const receiverOf = opts.receiverOf;
    this.#receiverOf = receiverOf ? (item) => receiverOf(item) : (_item, lane) => lane;
    this.#clock = opts.clock ?? realClock;
    outbox.onNew((meta) => this.#enqueue(meta));
    for (const meta of outbox.entries()) this.#enqueue(meta);
  }

  /** Picks up deliveries staged inside other transactions (`WebhookOutbox.stage`). */
  wake(): void {
    if (!this.#closed) this.#outbox.sync();
  }

  /** Attempts in flight over every lane (tests wait for 0). */
  get inFlight(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.inFlight;
    return n;
  }

  /**
   * Takes the due times from storage again (another writer moved deliveries, as the console's
   * "retry now" does) and ends every lane's pause: what is due now is attempted at once.
   */
  reschedule(): void {
    if (this.#closed) return;
    this.#outbox.sync();
    this.#outbox.refresh();
    for (const lane of this.#lanes.values()) {
      lane.failures = 0;
      lane.pauseMs = 0;
      lane.pausedUntil = 0;
      for (const seq of lane.queue.drain()) {
        const meta = this.#outbox.meta(seq);
        if (meta) lane.queue.push(meta.dueAt, seq);
      }
      this.#clock.clearTimer(lane.timer);
      lane.timerAt = Infinity;
      this.#schedule(lane);
    }
  }

  /** Stops sending; pending deliveries stay in the outbox for the next start. */
  close(): void {
    this.#closed = true;
    for (const lane of this.#lanes.values()) this.#clock.clearTimer(lane.timer);
    for (const a of this.#aborts) a.abort();
  }

  #lane(name: string): Lane {
    let lane = this.#lanes.get(name);
    if (!lane) {
      lane = {
        name,
        queue: new DueHeap(),
        inFlight: 0,
        failures: 0,
        pauseMs: 0,
        pausedUntil: 0,
        timerAt: Infinity,
        scheduled: false,
      };
      this.#lanes.set(name, lane);
    }
    return lane;
  }

  #enqueue(meta: OutboxMeta): void {
    const lane = this.#lane(meta.lane);
    lane.queue.push(meta.dueAt, meta.seq);
    this.#schedule(lane);
  }

  /** Pumps the lane on the next turn (once however many deliveries arrive in this one). */
  #schedule(lane: Lane): void {
    if (lane.scheduled || this.#closed) return;
    lane.scheduled = true;
    setTimeout(() => {
      lane.scheduled = false;
      this.#pump(lane);
    }, 0);
  }

  /** Wakes the lane at `at` (or sooner if already set sooner). */
  #wakeAt(lane: Lane, at: number): void {
    if (this.#closed || at >= lane.timerAt) return;
    this.#clock.clearTimer(lane.timer);
    lane.timerAt = at;
    lane.timer = this.#clock.setTimer(() => {
      lane.timerAt = Infinity;
      this.#pump(lane);
    }, Math.max(0, at - this.#clock.now()));
  }

  /** When a delivery due at `dueAt` may start: its due time, held by the lane's pause for at
   * most the pause's length. */
  #startAt(lane: Lane, dueAt: number): number {
    return Math.max(dueAt, Math.min(lane.pausedUntil, dueAt + lane.pauseMs));
  }

  /** Starts the lane's deliveries that may start now, earliest due first, up to its
   * concurrency; wakes the lane again when the next may start. */
  #pump(lane: Lane): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    while (lane.inFlight < this.#concurrency) {
      const top = lane.queue.peek();
      if (!top) break;
      const meta = this.#outbox.meta(top.seq);
      if (!meta) { // done or dropped
        lane.queue.pop();
        continue;
      }
      if (meta.dueAt !== top.dueAt) { // moved meanwhile (the console's retry now)
        lane.queue.pop();
        lane.queue.push(meta.dueAt, top.seq);
        continue;
      }
      if (this.#startAt(lane, top.dueAt) > now) break;
      lane.queue.pop();
      lane.inFlight++;
      void this.#attempt(lane, top.seq)
        .catch((err) => log.error("webhook attempt failed", errorFields(err)))
        .finally(() => {
          lane.inFlight--;
          this.#pump(lane);
        });
    }
    const next = lane.queue.peek();
    if (next && lane.inFlight < this.#concurrency) {
      this.#wakeAt(lane, this.#startAt(lane, next.dueAt));
    } else if (!next && lane.inFlight === 0) {
      this.#clock.clearTimer(lane.timer);
      this.#lanes.delete(lane.name);
    }
  }

  /** One attempt; the outbox then forgets the delivery or moves it to its next attempt. */
  async #attempt(lane: Lane, seq: number): Promise<void> {
    const kind = this.#outbox.kind;
    const item = this.#outbox.read(seq);
    if (!item) return void this.#outbox.done(seq).catch(() => {});
    const abort = new AbortController();
    this.#aborts.add(abort);
    const timeout = setTimeout(() => abort.abort(), this.#timeoutMs);
    let outcome: "delivered" | "retry" | "drop";
    try {
      outcome = await this.#deliver(item, abort.signal);
    } catch {
      outcome = "retry";
    } finally {
      clearTimeout(timeout);
      this.#aborts.delete(abort);
    }
    if (this.#closed) return; // shutting down: the delivery stays for the next start
    try {
      if (outcome === "drop") {
        record.webhook(kind, "discarded");
        return await this.#outbox.done(seq);
      }
      if (outcome === "delivered") {
        record.webhook(kind, "delivered");
        // The receiver answers again: its pause ends (no waiting retry is brought forward).
        lane.failures = 0;
        lane.pauseMs = 0;
        lane.pausedUntil = 0;
        return await this.#outbox.done(seq);
      }
      const now = this.#clock.now();
      lane.failures++;
      lane.pauseMs = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (lane.failures - 1));
      lane.pausedUntil = now + lane.pauseMs;
      if (item.attempt >= this.#delays.length) {
        record.webhook(kind, "given_up");
        record.webhookGivenUp(kind, item.appId, this.#receiverOf(item, lane.name));
        log.warn("webhook delivery given up", {
          kind,
          app: item.appId,
          receiver: this.#receiverOf(item, lane.name),
          delivery: item.id,
          attempts: item.attempt + 1,
        });
        return await this.#outbox.done(seq);
      }
      if (!this.#outbox.meta(seq)) return; // dropped while in flight
      record.webhook(kind, "retried");
      const dueAt = now + this.#delays[item.attempt];
      await this.#outbox.retry(seq, item, dueAt);
      if (this.#outbox.meta(seq)) lane.queue.push(dueAt, seq);
    } catch (err) {
      log.error("webhook outbox failed", errorFields(err));
    }
  }
}

/** POSTs a JSON body; true for a 2xx answer. Network errors and timeouts are false.
 * `report` (the console's tap) gets the HTTP status or the error's message. */
export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
  report?: (status: number | string) => void,
): Promise<boolean> {
  try {
    const res = await fetch(url, {
      method: "POST",
      signal,
      headers: { "Content-Type": "application/json", ...headers },
      body,
    });
    await res.body?.cancel();
    report?.(res.status);
    return res.ok;
  } catch (err) {
    report?.(String((err as Error)?.message ?? err).slice(0, 200));
    return false;
  }
}
