/**
 * Pusher-style channel webhooks (CONTRACT.md "Pusher protocol", docs/pusher.md "Webhooks"):
 * `channel_occupied` / `channel_vacated` (first subscriber in / last out, either protocol),
 * `member_added` / `member_removed` (presence, one user counted once), and `client_event`
 * (client events of either protocol). Events are batched per app for `BATCH_MS`, POSTed as
 * `{ time_ms, events }` to each of the app's webhooks that asked for them, signed like
 * Pusher (`X-Pusher-Key`, `X-Pusher-Signature` = HMAC-SHA256 hex of the body with the app
 * secret), and retried through the durable outbox (db `pusher:outbox`). In a cluster,
 * occupancy and presence are cluster-wide and only a channel's owner node reports its changes.
 */
import type { App, AppRegistry, WebhookEventType } from "../config/apps.ts";
import type { Hub } from "../hub/hub.ts";
import type { ChannelService, StoredEvent } from "../pubsub/service.ts";
import type { StoreEnv } from "../store/env.ts";
import { errorFields, log } from "../log/mod.ts";
import { type OutboxEntry, WebhookOutbox } from "../webhooks/outbox.ts";
import { OutboxSender, postJson } from "../webhooks/sender.ts";
import { VERSION } from "../version.ts";
import { tap, tapActive } from "../debug/tap.ts";
import { hmacHex } from "./signature.ts";
import { pusherData } from "./wire.ts";

/** Events of one app are collected this long before they are sent as one batch. */
export const BATCH_MS = 100;

/** One event of a webhook body. */
type WebhookEvent = { name: WebhookEventType; channel: string } & Record<string, unknown>;

/** One stored delivery: the body for one webhook URL of one app. */
interface Delivery extends OutboxEntry {
  appId: string;
  url: string;
}

/** See the module comment. */
export class PusherWebhooks {
  #apps: AppRegistry;
  #outbox: WebhookOutbox<Delivery>;
  #sender: OutboxSender<Delivery>;
  #pending = new Map<string, { app: App; events: WebhookEvent[] }>();
  #timer?: ReturnType<typeof setTimeout>;

  /** Observes the hub, presence and client events of `svc` for apps that have webhooks. */
  constructor(apps: AppRegistry, env: StoreEnv, hub: Hub, svc: ChannelService) {
    this.#apps = apps;
    this.#outbox = new WebhookOutbox<Delivery>(env, "pusher:outbox");
    this.#sender = new OutboxSender(this.#outbox, (d, signal) => this.#deliver(d, signal));
    // In a cluster every node sees a channel's changes; the topic's owner reports them.
    svc.occupancy.observe((topic, occupied) => {
      if (hub.owns(topic)) this.#add(topic, { name: occupied ? "channel_occupied" : "channel_vacated" });
    });
    svc.presence.observe((topic, userId, joined) => {
      if (hub.owns(topic)) this.#add(topic, { name: joined ? "member_added" : "member_removed", user_id: userId });
    });
    svc.onClientEvent((app, channel, e: StoredEvent) => {
      const event: WebhookEvent = { name: "client_event", channel, event: e.event, data: pusherData(e.data) };
      if (e.socket_id !== undefined) event.socket_id = e.socket_id;
      if (e.client_id !== undefined) event.user_id = e.client_id;
      this.#queue(app, event);
    });
  }

  /** Runs the sender now (the console's "retry now" made deliveries due). */
  wake(): void {
    this.#sender.wake(0);
  }

  /** Stops sending; staged deliveries stay in the outbox for the next start. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    await this.#flush();
    this.#sender.close();
  }

  /** Queues a channel event of the topic `pubsub:{key}:{channel}`. */
  #add(topic: string, event: Omit<WebhookEvent, "channel">) {
    if (!topic.startsWith("pubsub:")) return;
    const keyEnd = topic.indexOf(":", 7);
    const app = this.#apps.byKey(topic.slice(7, keyEnd));
    if (app) this.#queue(app, { ...event, channel: topic.slice(keyEnd + 1) } as WebhookEvent);
  }

  /** Queues one event of `app` for its webhooks that asked for its kind (`cache_miss` comes
   * this way, from lib/pusher/mod.ts). */
  enqueue(app: App, event: WebhookEvent): void {
    this.#queue(app, event);
  }

  #queue(app: App, event: WebhookEvent) {
    if (!app.webhooks?.some((w) => w.event_types.includes(event.name))) return;
    let batch = this.#pending.get(app.id);
    if (!batch) this.#pending.set(app.id, (batch = { app, events: [] }));
    batch.events.push(event);
    this.#timer ??= setTimeout(() => void this.#flush(), BATCH_MS);
  }

  /** Stages one delivery per app and webhook for what was collected, then wakes the sender. */
  async #flush() {
    this.#timer = undefined;
    const batches = [...this.#pending.values()];
    this.#pending.clear();
    const items: Delivery[] = [];
    for (const { app, events } of batches) {
      for (const hook of app.webhooks ?? []) {
        const wanted = events.filter((e) => hook.event_types.includes(e.name));
        if (wanted.length === 0) continue;
        const body = JSON.stringify({ time_ms: Date.now(), events: wanted });
        items.push({ id: crypto.randomUUID(), appId: app.id, url: hook.url, body, attempt: 0 });
      }
    }
    if (items.length === 0) return;
    try {
      await this.#outbox.add(items);
      this.#sender.wake(0);
    } catch (err) {
      log.error("webhook events could not be staged", { deliveries: items.length, ...errorFields(err) });
    }
  }

  /** One attempt; a webhook no longer configured (apps file changed) ends the delivery. */
  async #deliver(d: Delivery, signal: AbortSignal): Promise<"delivered" | "retry" | "drop"> {
    const app = this.#apps.byId(d.appId);
    if (!app?.webhooks?.some((w) => w.url === d.url)) return "drop";
    const ok = await postJson(d.url, {
      "User-Agent": `Switchboard-Webhooks/${VERSION}`,
      "X-Pusher-Key": app.key,
      "X-Pusher-Signature": hmacHex(app.secret, d.body),
    }, d.body, signal, tapActive ? (status) => tap(app.key, "webhook", { url: d.url, attempt: d.attempt + 1, status }) : undefined);
    return ok ? "delivered" : "retry";
  }
}
