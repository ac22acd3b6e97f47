/**
 * Sends the deliveries of a durable outbox in the background, with retries, one lane per
 * receiver (an app's webhook URL, a bot): each lane has its own concurrency (`concurrency`
 * attempts at once) and its own backoff (after a failed attempt the lane pauses, growing up to
 * 10 s; a success ends the pause and makes the lane's waiting retries due at once), so a dead
 * or hanging receiver delays only its own deliveries. Each attempt's answer is `delivered`
 * (forgotten), `retry` (moved to its next attempt after `retryDelaysMs[attempt]`, given up
 * after the last) or `drop` (forgotten: its target is gone). Shared by chat bot webhooks and
 * Pusher-style channel webhooks.
 */
import { record } from "../metrics/mod.ts";
import { errorFields, log } from "../log/mod.ts";
import type { OutboxEntry, OutboxMeta, WebhookOutbox } from "./outbox.ts";

/** Default waits between attempts: 9 attempts, given up about 73 minutes after the first. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 30_000, 120_000, 600_000, 3_600_000];

/** Attempts in flight per lane, by default. */
const CONCURRENCY = 4;
/** A failing lane's pause: this after the first failure, doubling, at most `MAX_PAUSE_MS`. */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 10_000;

/** Sender settings. */
export interface SenderOptions {
  /** Waits before the 2nd, 3rd, ... attempt; after the last, the delivery is given up. */
  retryDelaysMs?: number[];
  /** Per-attempt timeout. Default 10 000 ms. */
  timeoutMs?: number;
  /** Attempts in flight per lane. Default 4. */
  concurrency?: number;
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
      if (a[p].dueAt <= a[i].dueAt) break;
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
        if (l < a.length && a[l].dueAt < a[m].dueAt) m = l;
        if (r < a.length && a[r].dueAt < a[m].dueAt) m = r;
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

/** The deliveries of one receiver. */
interface Lane {
  name: string;
  /** Due now, oldest first. */
  ready: number[];
  /** Waiting for their next attempt. */
  later: DueHeap;
  inFlight: number;
  failures: number;
  pausedUntil: number;
  timer?: ReturnType<typeof setTimeout>;
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
  #lanes = new Map<string, Lane>();
  #aborts = new Set<AbortController>();
  #closed = false;

  /** Starts sending whatever the outbox holds (from before a restart too). */
  constructor(outbox: WebhookOutbox<T>, deliver: Deliver<T>, opts: SenderOptions = {}) {
    this.#outbox = outbox;
    this.#deliver = deliver;
    this.#delays = opts.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#concurrency = opts.concurrency ?? CONCURRENCY;
    outbox.onNew((meta) => this.#enqueue(meta));
    for (const meta of outbox.entries()) this.#enqueue(meta);
  }

  /** Picks up deliveries staged inside other transactions (`WebhookOutbox.stage`). */
  wake(): void {
    if (!this.#closed) this.#outbox.sync();
  }

  /**
   * Takes the due times from storage again (another writer moved deliveries, as the console's
   * "retry now" does) and ends every lane's pause: what is due now is attempted at once.
   */
  reschedule(): void {
    if (this.#closed) return;
    this.#outbox.sync();
    this.#outbox.refresh();
    const now = Date.now();
    for (const lane of this.#lanes.values()) {
      lane.failures = 0;
      lane.pausedUntil = 0;
      for (const seq of lane.later.drain()) {
        const meta = this.#outbox.meta(seq);
        if (!meta) continue;
        if (meta.dueAt <= now) lane.ready.push(seq);
        else lane.later.push(meta.dueAt, seq);
      }
      clearTimeout(lane.timer);
      lane.timerAt = Infinity;
      this.#schedule(lane);
    }
  }

  /** Stops sending; pending deliveries stay in the outbox for the next start. */
  close(): void {
    this.#closed = true;
    for (const lane of this.#lanes.values()) clearTimeout(lane.timer);
    for (const a of this.#aborts) a.abort();
  }

  #lane(name: string): Lane {
    let lane = this.#lanes.get(name);
    if (!lane) {
      lane = {
        name,
        ready: [],
        later: new DueHeap(),
        inFlight: 0,
        failures: 0,
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
    if (meta.dueAt <= Date.now()) lane.ready.push(meta.seq);
    else lane.later.push(meta.dueAt, meta.seq);
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
    clearTimeout(lane.timer);
    lane.timerAt = at;
    lane.timer = setTimeout(() => {
      lane.timerAt = Infinity;
      this.#pump(lane);
    }, Math.max(0, at - Date.now()));
  }

  /** Starts the lane's due attempts, up to its concurrency, unless it is paused. */
  #pump(lane: Lane): void {
    if (this.#closed) return;
    const now = Date.now();
    for (let top = lane.later.peek(); top && top.dueAt <= now; top = lane.later.peek()) {
      lane.ready.push(lane.later.pop()!.seq);
    }
    if (lane.pausedUntil > now) return this.#wakeAt(lane, lane.pausedUntil);
    while (lane.inFlight < this.#concurrency && lane.ready.length > 0) {
      const seq = lane.ready.shift()!;
      const meta = this.#outbox.meta(seq);
      if (!meta) continue; // done or dropped
      if (meta.dueAt > now) {
        lane.later.push(meta.dueAt, seq);
        continue;
      }
      lane.inFlight++;
      void this.#attempt(lane, seq)
        .catch((err) => log.error("webhook attempt failed", errorFields(err)))
        .finally(() => {
          lane.inFlight--;
          this.#pump(lane);
        });
    }
    const next = lane.later.peek();
    if (next) this.#wakeAt(lane, next.dueAt);
    else if (lane.ready.length === 0 && lane.inFlight === 0) {
      clearTimeout(lane.timer);
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
        this.#recovered(lane);
        return await this.#outbox.done(seq);
      }
      lane.failures++;
      lane.pausedUntil = Date.now() +
        Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (lane.failures - 1));
      if (item.attempt >= this.#delays.length) {
        record.webhook(kind, "given_up");
        log.warn("webhook delivery given up", {
          kind,
          app: item.appId,
          delivery: item.id,
          attempts: item.attempt + 1,
        });
        return await this.#outbox.done(seq);
      }
      if (!this.#outbox.meta(seq)) return; // dropped while in flight
      record.webhook(kind, "retried");
      const dueAt = Date.now() + this.#delays[item.attempt];
      await this.#outbox.retry(seq, item, dueAt);
      lane.later.push(dueAt, seq);
    } catch (err) {
      log.error("webhook outbox failed", errorFields(err));
    }
  }

  /** A receiver answered again: the lane's pause ends and its waiting retries are due now. */
  #recovered(lane: Lane): void {
    if (lane.failures === 0) return;
    lane.failures = 0;
    lane.pausedUntil = 0;
    const now = Date.now();
    for (const seq of lane.later.drain()) {
      const meta = this.#outbox.meta(seq);
      if (!meta) continue;
      meta.dueAt = now;
      lane.ready.push(seq);
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
