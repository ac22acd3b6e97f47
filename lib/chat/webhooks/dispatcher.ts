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
import type { App, AppRegistry } from "../../config/apps.ts";
import { type OutboxEntry, WebhookOutbox } from "../../webhooks/outbox.ts";
import { OutboxSender, postJson, type SenderOptions } from "../../webhooks/sender.ts";
import { VERSION } from "../../version.ts";
import { messageResource, threadResource } from "../rest/serialize.ts";
import type { ChatStore } from "../store.ts";
import type { ThreadLog } from "../thread_log.ts";
import type { BotEventType, MessageRecord, Thread, ThreadEntry } from "../types.ts";
import { signWebhook } from "./signature.ts";
import { keyOf } from "../../wire/key.ts";

/** One pending bot delivery, as stored in the outbox (db `chat:outbox`). */
export interface OutboxItem extends OutboxEntry {
  appId: string;
  botId: string;
  event: string;
}

/** The chat bot outbox. */
export function chatOutbox(
  env: ConstructorParameters<typeof WebhookOutbox>[0],
): WebhookOutbox<OutboxItem> {
  return new WebhookOutbox<OutboxItem>(env, "chat:outbox", {
    kind: "bot",
    laneOf: (d) => keyOf(d.appId, d.botId),
  });
}

/** Stages bot deliveries with the thread-log entries that cause them and sends them. */
export class WebhookDispatcher {
  #sender: OutboxSender<OutboxItem>;
  #unsubscribe: () => void;

  /**
   * Stages deliveries with every thread-log append that causes them (same transaction),
   * sends them after the commit, and resumes whatever the outbox holds from before a restart.
   */
  constructor(
    private store: ChatStore,
    private apps: AppRegistry,
    outbox: WebhookOutbox<OutboxItem>,
    threadLog: ThreadLog,
    opts: SenderOptions<OutboxItem> = {},
  ) {
    threadLog.onStage((app, threadId, first, entries) => {
      const items = entries.flatMap((entry, i) =>
        this.#deliveriesOf(app, threadId, first + i, entry)
      );
      return items.length ? () => items.forEach((item) => outbox.stage(item)) : undefined;
    });
    this.#sender = new OutboxSender(outbox, (item, signal) => this.#send(item, signal), {
      receiverOf: (item) => {
        const app = this.apps.byId(item.appId);
        return (app && this.store.bots.get(app, item.botId)?.webhookUrl) || `bot:${item.botId}`;
      },
      ...opts,
    });
    this.#unsubscribe = threadLog.onEntry(() => this.#sender.wake());
  }

  /** Stops sending; pending deliveries stay in the outbox for the next start. */
  close(): void {
    this.#unsubscribe();
    this.#sender.close();
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

  /**
   * One attempt. The bot is re-read so a rotated secret or a changed URL applies to retries;
   * a deleted bot (or app) ends the delivery.
   */
  async #send(d: OutboxItem, signal: AbortSignal): Promise<"delivered" | "retry" | "drop"> {
    const app = this.apps.byId(d.appId);
    const bot = app ? this.store.bots.get(app, d.botId) : undefined;
    if (!bot?.webhookUrl) return "drop";
    const timestamp = String(Math.floor(Date.now() / 1000));
    const ok = await postJson(
      bot.webhookUrl,
      {
        "User-Agent": `Switchboard-Webhooks/${VERSION}`,
        "X-Switchboard-Event": d.event,
        "X-Switchboard-Delivery": d.id,
        "X-Switchboard-Timestamp": timestamp,
        "X-Switchboard-Attempt": String(d.attempt + 1),
        "X-Switchboard-Signature": await signWebhook(bot.webhookSecret, timestamp, d.body),
      },
      d.body,
      signal,
    );
    return ok ? "delivered" : "retry";
  }
}
