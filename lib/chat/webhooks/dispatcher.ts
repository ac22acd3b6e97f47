/**
 * Bot webhooks. Listens to the thread log (REST and live writes alike) and POSTs the events a
 * thread's bot subscribed to (docs/chat-rest.md "Webhooks"):
 * - `message.created`, `message.updated`, `message.deleted`: while the thread's status is
 *   `bot`, to `thread.botId`, except for messages that bot wrote itself (`botId` = the bot);
 * - `thread.status_changed`: every status change, to the thread's bot (it learns of handoff,
 *   resolve, archive).
 * Deliveries are staged in the durable outbox in the same transaction as the change, sent in
 * the background (never blocking an API call) and resumed after a restart. Each delivery keeps
 * one `X-Switchboard-Delivery` id across its attempts; non-2xx answers, network errors and
 * timeouts are retried after each of `retryDelaysMs`, then given up.
 */
import type { Key } from "lmdb";
import type { App, AppRegistry } from "../../config/apps.ts";
import { record } from "../../metrics/mod.ts";
import type { OutboxItem, WebhookOutbox } from "./outbox.ts";
import { VERSION } from "../../version.ts";
import { messageResource, threadResource } from "../rest/serialize.ts";
import type { ChatStore } from "../store.ts";
import type { ThreadLog } from "../thread_log.ts";
import type { BotEventType, MessageRecord, Thread, ThreadEntry } from "../types.ts";
import { signWebhook } from "./signature.ts";
import { errorFields, log } from "../../log/mod.ts";

/** Dispatcher settings. */
export interface WebhookOptions {
  /** Waits before the 2nd, 3rd, ... attempt; after the last, the delivery is given up. */
  retryDelaysMs?: number[];
  /** Per-attempt timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

/** Default waits between attempts: 9 attempts, given up about 73 minutes after the first. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 30_000, 120_000, 600_000, 3_600_000];

/** Deliveries attempted at once. */
const BATCH = 16;

/** Sends signed webhook deliveries from the durable outbox, with retries. */
export class WebhookDispatcher {
  #delays: number[];
  #timeoutMs: number;
  #timer?: ReturnType<typeof setTimeout>;
  #wakeAt = Infinity;
  #pumping = false;
  #again = false;
  #aborts = new Set<AbortController>();
  #closed = false;
  #unsubscribe: () => void;

  /**
   * Stages deliveries with every thread-log append that causes them (same transaction),
   * sends them after the commit, and resumes whatever the outbox holds from before a restart.
   */
  constructor(
    private store: ChatStore,
    private apps: AppRegistry,
    private outbox: WebhookOutbox,
    threadLog: ThreadLog,
    opts: WebhookOptions = {},
  ) {
    this.#delays = opts.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    threadLog.onStage((app, threadId, first, entries) => {
      const items = entries.flatMap((entry, i) => this.#deliveriesOf(app, threadId, first + i, entry));
      return items.length ? () => items.forEach((item) => outbox.stage(item)) : undefined;
    });
    this.#unsubscribe = threadLog.onEntry(() => this.#wake(0));
    this.#wake(0);
  }

  /** Stops sending; pending deliveries stay in the outbox for the next start. */
  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    clearTimeout(this.#timer);
    for (const a of this.#aborts) a.abort();
  }

  /** The deliveries one thread-log entry causes (read inside its transaction). */
  #deliveriesOf(app: App, threadId: string, logId: number, entry: ThreadEntry): OutboxItem[] {
    const d = entry.data;
    if (entry.event === "thread:updated" && d.previousStatus !== undefined) {
      const thread = d.thread as Thread;
      if (!thread.botId) return [];
      return this.#item(app, thread.botId, "thread.status_changed", threadId, logId, {
        thread: threadResource(thread, logId),
        previous_status: d.previousStatus,
      });
    }
    const event = ({
      "message:created": "message.created",
      "message:updated": "message.updated",
      "message:deleted": "message.deleted",
    } as Record<string, BotEventType>)[entry.event];
    if (!event) return [];
    const thread = this.store.getThread(app, threadId);
    if (!thread || thread.status !== "bot" || !thread.botId) return [];
    const message = d.message as MessageRecord | undefined;
    if (message?.botId === thread.botId) return [];
    const data = message
      ? { message: messageResource(message) }
      : { message_id: d.messageId, hard: d.hard };
    if (event === "message.deleted") Object.assign(data, { message_id: d.messageId, hard: d.hard });
    return this.#item(app, thread.botId, event, threadId, logId, data);
  }

  #item(
    app: App,
    botId: string,
    event: BotEventType,
    threadId: string,
    logId: number,
    data: Record<string, unknown>,
  ): OutboxItem[] {
    const bot = this.store.bots.get(app, botId);
    if (!bot?.webhookUrl || !bot.events.includes(event)) return [];
    const id = crypto.randomUUID();
    const body = JSON.stringify({
      id,
      type: event,
      created_at: Date.now(),
      app_id: app.id,
      bot_id: botId,
      thread_id: threadId,
      log_id: logId,
      data,
    });
    return [{ id, appId: app.id, botId, event, body, attempt: 0 }];
  }

  /** Runs the pump in `ms` (or sooner if already due sooner). */
  #wake(ms: number): void {
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

  /** Sends every due delivery, then sleeps until the next one is due. */
  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        for (let batch = this.outbox.due(Date.now(), BATCH); batch.length && !this.#closed; batch = this.outbox.due(Date.now(), BATCH)) {
          await Promise.all(batch.map(({ key, item }) => this.#send(key, item)));
        }
      } while (this.#again && !this.#closed);
    } catch (err) {
      log.error("webhook outbox failed", errorFields(err));
    } finally {
      this.#pumping = false;
    }
    const next = this.outbox.nextDue();
    if (next !== undefined) this.#wake(Math.max(0, next - Date.now()));
  }

  /** One attempt; the outbox then forgets the delivery or moves it to its next attempt. */
  async #send(key: Key, d: OutboxItem): Promise<void> {
    // Re-read the bot so a rotated secret or a changed URL applies to retries; a deleted bot
    // (or app) ends the delivery.
    const app = this.apps.byId(d.appId);
    const bot = app ? this.store.bots.get(app, d.botId) : undefined;
    if (!bot?.webhookUrl) return await this.outbox.done(key);
    const ok = await this.#post(bot.webhookUrl, bot.webhookSecret, d);
    if (this.#closed) return; // shutting down: the delivery stays for the next start
    if (ok) {
      record.webhook("delivered");
      return await this.outbox.done(key);
    }
    if (d.attempt >= this.#delays.length) {
      record.webhook("given_up");
      log.warn("webhook delivery given up", { app: d.appId, bot: d.botId, delivery: d.id, attempts: d.attempt + 1 });
      return await this.outbox.done(key);
    }
    record.webhook("retried");
    await this.outbox.retryAt(key, d, Date.now() + this.#delays[d.attempt]);
  }

  async #post(url: string, secret: string, d: OutboxItem): Promise<boolean> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const abort = new AbortController();
    this.#aborts.add(abort);
    const timeout = setTimeout(() => abort.abort(), this.#timeoutMs);
    try {
      const res = await fetch(url, {
        method: "POST",
        signal: abort.signal,
        headers: {
          "Content-Type": "application/json",
          "User-Agent": `Switchboard-Webhooks/${VERSION}`,
          "X-Switchboard-Event": d.event,
          "X-Switchboard-Delivery": d.id,
          "X-Switchboard-Timestamp": timestamp,
          "X-Switchboard-Attempt": String(d.attempt + 1),
          "X-Switchboard-Signature": await signWebhook(secret, timestamp, d.body),
        },
        body: d.body,
      });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    } finally {
      clearTimeout(timeout);
      this.#aborts.delete(abort);
    }
  }
}
