/**
 * Sends the deliveries of a durable outbox in the background, with retries: each attempt's
 * answer is `delivered` (forgotten), `retry` (moved to its next attempt after
 * `retryDelaysMs[attempt]`, given up after the last) or `drop` (forgotten: its target is
 * gone). Shared by chat bot webhooks and Pusher-style channel webhooks.
 */
import type { Key } from "lmdb";
import { record } from "../metrics/mod.ts";
import { errorFields, log } from "../log/mod.ts";
import type { OutboxEntry, WebhookOutbox } from "./outbox.ts";

/** Default waits between attempts: 9 attempts, given up about 73 minutes after the first. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 30_000, 120_000, 600_000, 3_600_000];

/** Deliveries attempted at once. */
const BATCH = 16;

/** Sender settings. */
export interface SenderOptions {
  /** Waits before the 2nd, 3rd, ... attempt; after the last, the delivery is given up. */
  retryDelaysMs?: number[];
  /** Per-attempt timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

/** One attempt: POST to `url` and report whether the target accepted it. */
export type Deliver<T> = (item: T, signal: AbortSignal) => Promise<"delivered" | "retry" | "drop">;

/** See the module comment. */
export class OutboxSender<T extends OutboxEntry> {
  #outbox: WebhookOutbox<T>;
  #deliver: Deliver<T>;
  #delays: number[];
  #timeoutMs: number;
  #timer?: ReturnType<typeof setTimeout>;
  #wakeAt = Infinity;
  #pumping = false;
  #again = false;
  #aborts = new Set<AbortController>();
  #closed = false;

  /** Starts sending whatever the outbox holds (from before a restart too). */
  constructor(outbox: WebhookOutbox<T>, deliver: Deliver<T>, opts: SenderOptions = {}) {
    this.#outbox = outbox;
    this.#deliver = deliver;
    this.#delays = opts.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.wake(0);
  }

  /** Runs the pump in `ms` (or sooner if already due sooner). */
  wake(ms = 0): void {
    if (this.#closed) return;
    const at = Date.now() + ms;
    if (at >= this.#wakeAt) return;
    clearTimeout(this.#timer);
    this.#wakeAt = at;
    this.#timer = setTimeout(() => {
      this.#wakeAt = Infinity;
      void this.#pump();
    }, ms);
  }

  /** Stops sending; pending deliveries stay in the outbox for the next start. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const a of this.#aborts) a.abort();
  }

  /** Sends every due delivery, then sleeps until the next one is due. */
  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    const outbox = this.#outbox;
    try {
      do {
        this.#again = false;
        for (let batch = outbox.due(Date.now(), BATCH); batch.length && !this.#closed; batch = outbox.due(Date.now(), BATCH)) {
          await Promise.all(batch.map(({ key, item }) => this.#attempt(key, item)));
        }
      } while (this.#again && !this.#closed);
    } catch (err) {
      log.error("webhook outbox failed", errorFields(err));
    } finally {
      this.#pumping = false;
    }
    const next = outbox.nextDue();
    if (next !== undefined) this.wake(Math.max(0, next - Date.now()));
  }

  /** One attempt; the outbox then forgets the delivery or moves it to its next attempt. */
  async #attempt(key: Key, item: T): Promise<void> {
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
    if (outcome === "drop") return await this.#outbox.done(key);
    if (outcome === "delivered") {
      record.webhook("delivered");
      return await this.#outbox.done(key);
    }
    if (item.attempt >= this.#delays.length) {
      record.webhook("given_up");
      log.warn("webhook delivery given up", { delivery: item.id, attempts: item.attempt + 1 });
      return await this.#outbox.done(key);
    }
    record.webhook("retried");
    await this.#outbox.retryAt(key, item, Date.now() + this.#delays[item.attempt]);
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
    const res = await fetch(url, { method: "POST", signal, headers: { "Content-Type": "application/json", ...headers }, body });
    await res.body?.cancel();
    report?.(res.status);
    return res.ok;
  } catch (err) {
    report?.(String((err as Error)?.message ?? err).slice(0, 200));
    return false;
  }
}
