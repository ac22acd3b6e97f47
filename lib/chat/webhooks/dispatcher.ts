/**
 * Bot webhooks. Listens to the thread log (REST and live writes alike) and POSTs the events a
 * thread's bot subscribed to (docs/chat-rest.md "Webhooks"):
 * - `message.created`, `message.updated`, `message.deleted`: while the thread's status is
 *   `bot`, to `thread.botId`, except for messages that bot wrote itself (`botId` = the bot);
 * - `thread.status_changed`: every status change, to the thread's bot (it learns of handoff,
 *   resolve, archive).
 * Deliveries run in the background (never blocking an API call) from an in-memory queue: a
 * restart drops pending retries. Each delivery keeps one `X-Switchboard-Delivery` id across
 * its attempts; non-2xx and network errors are retried after each of `retryDelaysMs`.
 */
import type { App } from "../../config/apps.ts";
import { VERSION } from "../../version.ts";
import { messageResource, threadResource } from "../rest/serialize.ts";
import type { ChatStore } from "../store.ts";
import type { ThreadLog } from "../thread_log.ts";
import type { BotEventType, MessageRecord, Thread, ThreadEntry } from "../types.ts";
import { signWebhook } from "./signature.ts";
import { errorFields, log } from "../../log/mod.ts";

/** Dispatcher settings. */
export interface WebhookOptions {
  /** Waits before the 2nd, 3rd, ... attempt. Default 500, 1000, 2000, 4000 ms (5 attempts). */
  retryDelaysMs?: number[];
  /** Per-attempt timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

interface Delivery {
  id: string;
  app: App;
  botId: string;
  event: BotEventType;
  body: string;
  attempt: number;
}

/** Sends signed webhook deliveries with retries. */
export class WebhookDispatcher {
  #delays: number[];
  #timeoutMs: number;
  #timers = new Set<ReturnType<typeof setTimeout>>();
  #aborts = new Set<AbortController>();
  #closed = false;
  #unsubscribe: () => void;

  /** Starts listening to `log`; bots and threads are read from `store`. */
  constructor(private store: ChatStore, log: ThreadLog, opts: WebhookOptions = {}) {
    this.#delays = opts.retryDelaysMs ?? [500, 1000, 2000, 4000];
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#unsubscribe = log.onEntry((app, threadId, logId, entry) =>
      this.#onEntry(app, threadId, logId, entry)
    );
  }

  /** Stops listening, cancels pending retries and aborts in-flight requests. */
  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    for (const t of this.#timers) clearTimeout(t);
    for (const a of this.#aborts) a.abort();
  }

  #onEntry(app: App, threadId: string, logId: number, entry: ThreadEntry): void {
    const d = entry.data;
    if (entry.event === "thread:updated" && d.previousStatus !== undefined) {
      const thread = d.thread as Thread;
      if (!thread.botId) return;
      this.#enqueue(app, thread.botId, "thread.status_changed", threadId, logId, {
        thread: threadResource(thread, logId),
        previous_status: d.previousStatus,
      });
      return;
    }
    const event = ({
      "message:created": "message.created",
      "message:updated": "message.updated",
      "message:deleted": "message.deleted",
    } as Record<string, BotEventType>)[entry.event];
    if (!event) return;
    const thread = this.store.getThread(app, threadId);
    if (!thread || thread.status !== "bot" || !thread.botId) return;
    const message = d.message as MessageRecord | undefined;
    if (message?.botId === thread.botId) return;
    const data = message
      ? { message: messageResource(message) }
      : { message_id: d.messageId, hard: d.hard };
    if (event === "message.deleted") Object.assign(data, { message_id: d.messageId, hard: d.hard });
    this.#enqueue(app, thread.botId, event, threadId, logId, data);
  }

  #enqueue(
    app: App,
    botId: string,
    event: BotEventType,
    threadId: string,
    logId: number,
    data: Record<string, unknown>,
  ): void {
    const bot = this.store.bots.get(app, botId);
    if (!bot?.webhookUrl || !bot.events.includes(event) || this.#closed) return;
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
    this.#schedule({ id, app, botId, event, body, attempt: 0 }, 0);
  }

  #schedule(d: Delivery, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#attempt(d).catch((err) => log.warn("webhook delivery failed", errorFields(err)));
    }, delayMs);
    this.#timers.add(timer);
  }

  async #attempt(d: Delivery): Promise<void> {
    // Re-read the bot so a rotated secret or a changed URL applies to retries; a deleted bot
    // ends the delivery.
    const bot = this.store.bots.get(d.app, d.botId);
    if (!bot?.webhookUrl || this.#closed) return;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const abort = new AbortController();
    this.#aborts.add(abort);
    const timeout = setTimeout(() => abort.abort(), this.#timeoutMs);
    let ok = false;
    try {
      const res = await fetch(bot.webhookUrl, {
        method: "POST",
        signal: abort.signal,
        headers: {
          "Content-Type": "application/json",
          "User-Agent": `Switchboard-Webhooks/${VERSION}`,
          "X-Switchboard-Event": d.event,
          "X-Switchboard-Delivery": d.id,
          "X-Switchboard-Timestamp": timestamp,
          "X-Switchboard-Attempt": String(d.attempt + 1),
          "X-Switchboard-Signature": await signWebhook(bot.webhookSecret, timestamp, d.body),
        },
        body: d.body,
      });
      await res.body?.cancel();
      ok = res.ok;
    } catch {
      ok = false;
    } finally {
      clearTimeout(timeout);
      this.#aborts.delete(abort);
    }
    if (ok || this.#closed || d.attempt >= this.#delays.length) return;
    this.#schedule({ ...d, attempt: d.attempt + 1 }, this.#delays[d.attempt]);
  }
}
