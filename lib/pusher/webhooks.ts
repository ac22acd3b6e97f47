/**
 * Pusher-style channel webhooks (docs/pusher.md "Webhooks"):
 * `channel_occupied` / `channel_vacated` (first subscriber in / last out, either protocol),
 * `member_added` / `member_removed` (presence, one user counted once), and `client_event`
 * (client events of either protocol). POSTed as `{ time_ms, events }` to each of the app's
 * webhooks that asked for them (one event per request, or every event staged together in one
 * request with the app's `webhook_batching`), signed like Pusher (`X-Pusher-Key`,
 * `X-Pusher-Signature` = HMAC-SHA256 hex of the body with the app secret), and retried through
 * the durable, bounded outbox (db `pusher:outbox`, node-local; lib/webhooks/).
 *
 * Nothing a crash can lose:
 * - a client event is published only once its webhook is durable (`enqueue` resolves then;
 *   `ChannelService.publishClient` waits for it), so no subscriber sees an event whose
 *   webhook a crash could lose;
 * - a join that will occupy a channel or add a member waits (`ChannelService.onEnter`) until
 *   its `channel_occupied` / `member_added` are durable, together with a record of what this
 *   node has reported (`["l", topic, userId | ""]` rows of the same database; other changes,
 *   such as a cluster peer's, are staged within one commit). A member or channel keeps its
 *   record until its `member_removed` / `channel_vacated` is stored in the same
 *   transaction. A restart turns the records left by a crash into `member_removed` and
 *   `channel_vacated` (in clustered mode, a few heartbeats after start, only for those no node
 *   holds any more: the other nodes reported the rest when the crashed node went silent).
 * In a cluster, occupancy and presence are cluster-wide and only a channel's owner node reports
 * its changes (and holds the joins made on it). A join on another node is reported once its
 * report reaches the owner; should the owner leave first, the topic's new owner reports every
 * channel and member of it that it holds no record of (`#takeOver`), so that join is not lost.
 */
import type { Key, Table } from "../store/table.ts";
import {
  type App,
  type AppRegistry,
  type WebhookEventType,
  webhookMatches,
} from "../config/apps.ts";
import type { Hub } from "../hub/hub.ts";
import type { ChannelService, StoredEvent } from "../pubsub/service.ts";
import type { Storage } from "../store/storage.ts";
import { errorFields, log } from "../log/mod.ts";
import { type OutboxEntry, WebhookOutbox } from "../webhooks/outbox.ts";
import { OutboxSender, postJson } from "../webhooks/sender.ts";
import { VERSION } from "../version.ts";
import { tap, tapActive } from "../debug/tap.ts";
import { hmacHex } from "./signature.ts";
import { pusherData } from "./wire.ts";
import { Topic } from "../wire/topic.ts";
import { keyOf } from "../wire/key.ts";

/** With `webhook_batching`, at most this many events go in one request. */
export const MAX_BATCH_EVENTS = 100;

/** Clustered mode: the restart's reconciliation waits this long for the other nodes' state. */
const CLUSTER_RECONCILE_MS = 5_000;

/** The database of the outbox and of the reported-state records. */
const DB = "pusher:outbox";

/** One event of a webhook body. */
export type WebhookEvent = { name: WebhookEventType; channel: string } & Record<string, unknown>;

/** One stored delivery: the body for one webhook URL of one app. */
interface Delivery extends OutboxEntry {
  appId: string;
  url: string;
}

/** Events and record changes written in one transaction. */
interface Batch {
  events: { app: App; event: WebhookEvent }[];
  /** record id -> its key and whether it is stored (true) or removed. */
  records: Map<string, { key: Key; put: boolean }>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** See the module comment. */
export class PusherWebhooks {
  #apps: AppRegistry;
  #outbox: WebhookOutbox<Delivery>;
  #sender: OutboxSender<Delivery>;
  #db: Table<number>;
  #open?: Batch;
  #running = false;
  #closed = false;
  /** Record ids this node means to have stored (updated as changes are queued). */
  #records = new Set<string>();
  /** Records found at start, not yet reconciled nor touched since. */
  #stale = new Map<string, Key>();
  #reconcileTimer?: ReturnType<typeof setTimeout>;
  /** Record ids reported ahead of their join (`#beforeEnter`), until the change itself is seen:
   * the write holding each. */
  #announced = new Map<string, Promise<void>>();

  /** Observes the hub, presence and client events of `svc` for apps that have webhooks. */
  constructor(apps: AppRegistry, env: Storage, hub: Hub, svc: ChannelService) {
    this.#apps = apps;
    this.#db = env.db<number>(DB);
    this.#outbox = new WebhookOutbox<Delivery>(env, DB, {
      kind: "pusher",
      laneOf: (d) => keyOf(d.appId, d.url),
    });
    this.#sender = new OutboxSender(this.#outbox, (d, signal) => this.#deliver(d, signal), {
      receiverOf: (d) => d.url,
    });
    // In a cluster every node sees a channel's changes; the topic's owner reports them.
    svc.occupancy.observe((topic, occupied) => {
      this.#change(
        topic,
        "",
        occupied ? "channel_occupied" : "channel_vacated",
        hub.owns(topic),
        {},
      );
    });
    svc.presence.observe((topic, userId, joined) => {
      this.#change(topic, userId, joined ? "member_added" : "member_removed", hub.owns(topic), {
        user_id: userId,
      });
    });
    svc.onEnter((app, topic, userId) => this.#beforeEnter(svc, hub, app, topic, userId));
    hub.onOwnerGone((wasOwner) => this.#takeOver(svc, hub, wasOwner));
    svc.onClientEvent((app, channel, e: StoredEvent) => {
      const event: WebhookEvent = {
        name: "client_event",
        channel,
        event: e.event,
        data: pusherData(e.data),
      };
      if (e.socket_id !== undefined) event.socket_id = e.socket_id;
      if (e.client_id !== undefined) event.user_id = e.client_id;
      return this.enqueue(app, event);
    });
    for (const key of this.#db.getKeys({ start: ["l"], end: ["m"] })) {
      const [, topic, user] = key as [string, string, string];
      this.#stale.set(recordId(topic, user), key);
      this.#records.add(recordId(topic, user)); // stored: a change before the reconciliation ends it
    }
    if (this.#stale.size > 0) {
      if (env.remote) {
        this.#reconcileTimer = setTimeout(() => this.#reconcile(svc), CLUSTER_RECONCILE_MS);
      } else this.#reconcile();
    }
  }

  /**
   * Queues one webhook event of `app` for the webhooks that asked for its type (client events
   * and, from lib/pusher/mod.ts, `cache_miss` come this way); resolves once it is durable in
   * the outbox (at once when no webhook wants it). Rejects when storage refused it.
   */
  enqueue(app: App, event: WebhookEvent): Promise<void> {
    if (this.#closed || !wants(app, event.name, event.channel)) return Promise.resolve();
    const batch = this.#batch();
    batch.events.push({ app, event });
    return batch.promise;
  }

  /** Runs the sender now (the console's "retry now" made deliveries due). */
  wake(): void {
    this.#sender.reschedule();
  }

  /** Stops sending; staged deliveries stay in the outbox for the next start. */
  async close(): Promise<void> {
    clearTimeout(this.#reconcileTimer);
    while (this.#running || this.#open) {
      await (this.#open?.promise ?? new Promise((r) => setTimeout(r, 5))).catch(() => {});
    }
    this.#closed = true;
    this.#sender.close();
  }

  /**
   * Before a join on this node: the `channel_occupied` / `member_added` it is about to cause
   * (the channel is empty, the user absent) are stored, with their records, before it goes on,
   * so no client sees a join whose webhook a crash could lose. What the join ends up not
   * causing (it failed, or the socket left first) is reported closed once it has ended.
   */
  #beforeEnter(
    svc: ChannelService,
    hub: Hub,
    app: App,
    topic: Topic,
    userId?: string,
  ): Promise<() => void> | undefined {
    if (this.#closed || !app.webhooks?.length || topic.product !== "pubsub" || !hub.owns(topic)) {
      return;
    }
    const channel = topic.name;
    const mine: [string, string][] = [];
    const waits: Promise<void>[] = [];
    const announce = (
      user: string,
      name: WebhookEventType,
      closing: WebhookEventType,
      fields: Record<string, unknown>,
    ) => {
      const id = recordId(topic.key, user);
      const known = this.#announced.get(id);
      if (known) return void waits.push(known);
      const present = user === ""
        ? svc.occupancy.count(topic) > 0
        : svc.presence.members(topic).some((m) => m.user_id === user);
      if (present || !(wants(app, name, channel) || wants(app, closing, channel))) return;
      const batch = this.#batch();
      if (wants(app, name, channel)) {
        batch.events.push({ app, event: { name, channel, ...fields } as WebhookEvent });
      }
      if (wants(app, closing, channel)) {
        this.#records.add(id);
        batch.records.set(id, { key: ["l", topic.key, user], put: true });
      }
      this.#stale.delete(id);
      this.#announced.set(id, batch.promise);
      mine.push([id, user]);
      waits.push(batch.promise);
    };
    announce("", "channel_occupied", "channel_vacated", {});
    if (userId !== undefined) {
      announce(userId, "member_added", "member_removed", { user_id: userId });
    }
    if (waits.length === 0) return;
    const settle = () => {
      // Members first, then the channel (as Pusher orders them).
      for (const [id, user] of mine.reverse()) {
        if (!this.#announced.delete(id)) continue; // the change itself was seen
        const closing = user === "" ? "channel_vacated" : "member_removed";
        this.#change(topic, user, closing, true, user === "" ? {} : { user_id: user });
      }
    };
    return Promise.all(waits).then(() => settle, (err) => {
      for (const [id] of mine) {
        this.#announced.delete(id);
        this.#records.delete(id);
      }
      throw err;
    });
  }

  /** One occupancy or presence change of the topic `pubsub:{key}:{channel}`. */
  #change(
    parsed: Topic,
    user: string,
    name: WebhookEventType,
    owned: boolean,
    fields: Record<string, unknown>,
  ) {
    if (this.#closed || parsed.product !== "pubsub") return;
    const topic = parsed.key;
    const app = this.#apps.byKey(parsed.appKey);
    if (!app) return;
    const id = recordId(topic, user);
    this.#stale.delete(id); // a change after the start supersedes what a crash left
    const added = name === "channel_occupied" || name === "member_added";
    if (added && this.#announced.delete(id)) return; // stored before its join went on
    const closing = user === "" ? "channel_vacated" : "member_removed";
    let record: { key: Key; put: boolean } | undefined;
    if (added && owned && wants(app, closing, parsed.name)) {
      this.#records.add(id);
      record = { key: ["l", topic, user], put: true };
    } else if (!added && this.#records.delete(id)) {
      record = { key: ["l", topic, user], put: false };
    }
    const event = owned ? { name, channel: parsed.name, ...fields } as WebhookEvent : undefined;
    if (event && wants(app, name, parsed.name)) {
      const batch = this.#batch();
      batch.events.push({ app, event });
      if (record) batch.records.set(id, record);
    } else if (record) this.#batch().records.set(id, record);
  }

  /**
   * Clustered mode: a node left, and this node now owns some of its topics. It may have died
   * before reporting a join made on another node (reported to the owner within about 20 ms), so
   * every channel still occupied and member still present in those topics that this node holds
   * no record of gets its `channel_occupied` / `member_added` now, with its record (the end
   * follows). At least once: what the gone node did report comes again.
   */
  #takeOver(svc: ChannelService, hub: Hub, wasOwner: (topic: Topic) => boolean): void {
    if (this.#closed) return;
    for (const topic of svc.occupancy.topics()) {
      if (!wasOwner(topic) || !hub.owns(topic)) continue;
      if (!this.#apps.byKey(topic.appKey)?.webhooks?.length) continue;
      const claim = (user: string, name: WebhookEventType, fields: Record<string, unknown>) => {
        const id = recordId(topic.key, user);
        if (!this.#records.has(id) && !this.#announced.has(id)) {
          this.#change(topic, user, name, true, fields);
        }
      };
      claim("", "channel_occupied", {});
      for (const m of svc.presence.members(topic)) {
        claim(m.user_id, "member_added", { user_id: m.user_id });
      }
    }
  }

  /**
   * What a crash left: every record still stale becomes `member_removed` / `channel_vacated`
   * (members first), unless (clustered mode) the cluster still has that member or channel.
   */
  #reconcile(svc?: ChannelService): void {
    // The channel's own record (user "") after its members'.
    const channelRecord = (key: Key) => Number((key as [string, string, string])[2] === "");
    const stale = [...this.#stale].sort(([, a], [, b]) => channelRecord(a) - channelRecord(b));
    this.#stale.clear();
    const batch = this.#batch();
    let events = 0;
    for (const [id, key] of stale) {
      const [, stored, user] = key as [string, string, string];
      this.#records.delete(id);
      batch.records.set(id, { key, put: false });
      // Records keep the topic string: parsed here, where it is read back.
      const parsed = Topic.parseOf(stored, "pubsub");
      if (
        svc && parsed &&
        (user === ""
          ? svc.occupancy.count(parsed) > 0
          : svc.presence.members(parsed).some((m) => m.user_id === user))
      ) {
        continue; // still there: its owner reports its end
      }
      const app = parsed && this.#apps.byKey(parsed.appKey);
      const name: WebhookEventType = user === "" ? "channel_vacated" : "member_removed";
      if (!parsed || !app || !wants(app, name, parsed.name)) continue;
      const event = {
        name,
        channel: parsed.name,
        ...(user === "" ? {} : { user_id: user }),
      } as WebhookEvent;
      batch.events.push({ app, event });
      events++;
    }
    log.info("webhooks: reconciled what the last run left", { records: stale.length, events });
  }

  /** The batch the next write takes (one write runs at a time; the next gathers meanwhile). */
  #batch(): Batch {
    if (this.#open) return this.#open;
    let resolve!: () => void, reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {}); // presence changes do not wait; client events see the rejection
    this.#open = { events: [], records: new Map(), promise, resolve, reject };
    if (!this.#running) setTimeout(() => void this.#run(), 0);
    return this.#open;
  }

  async #run(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (let batch = this.#open; batch; batch = this.#open) {
        this.#open = undefined;
        try {
          await this.#write(batch);
          batch.resolve();
        } catch (err) {
          log.error("webhook events could not be staged", {
            events: batch.events.length,
            ...errorFields(err),
          });
          batch.reject(err);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** Stages one delivery per event (or per batch) and webhook, with the record changes. */
  async #write(batch: Batch): Promise<void> {
    const byApp = new Map<App, WebhookEvent[]>();
    for (const { app, event } of batch.events) {
      let list = byApp.get(app);
      if (!list) byApp.set(app, list = []);
      list.push(event);
    }
    const items: Delivery[] = [];
    const time_ms = Date.now();
    for (const [app, events] of byApp) {
      for (const hook of app.webhooks ?? []) {
        const wanted = events.filter((e) =>
          (hook.event_types as string[]).includes(e.name) && webhookMatches(hook, e.channel)
        );
        const size = app.webhook_batching ? MAX_BATCH_EVENTS : 1;
        for (let i = 0; i < wanted.length; i += size) {
          const body = JSON.stringify({ time_ms, events: wanted.slice(i, i + size) });
          items.push({ id: crypto.randomUUID(), appId: app.id, url: hook.url, body, attempt: 0 });
        }
      }
    }
    if (items.length === 0 && batch.records.size === 0) return;
    await this.#outbox.add(items, () => {
      for (const { key, put } of batch.records.values()) {
        if (put) this.#db.put(key, 1);
        else this.#db.remove(key);
      }
    });
  }

  /** One attempt; a webhook no longer configured (apps file changed) ends the delivery. */
  async #deliver(d: Delivery, signal: AbortSignal): Promise<"delivered" | "retry" | "drop"> {
    const app = this.#apps.byId(d.appId);
    const hook = app?.webhooks?.find((w) => w.url === d.url);
    if (!app || !hook) return "drop";
    const ok = await postJson(
      d.url,
      {
        // The webhook's own headers (its User-Agent replaces ours); the apps file refuses the
        // signature headers among them.
        ...(hasHeader(hook.headers, "user-agent")
          ? {}
          : { "User-Agent": `Switchboard-Webhooks/${VERSION}` }),
        ...hook.headers,
        "X-Pusher-Key": app.key,
        "X-Pusher-Signature": hmacHex(app.secret, d.body),
      },
      d.body,
      signal,
      tapActive
        ? (status) => tap(app.key, "webhook", { url: d.url, attempt: d.attempt + 1, status })
        : undefined,
    );
    return ok ? "delivered" : "retry";
  }
}

/** Whether any of the app's webhooks asked for events named `name` of the channel `channel`. */
function wants(app: App, name: string, channel: string): boolean {
  return app.webhooks?.some((w) =>
    (w.event_types as string[]).includes(name) && webhookMatches(w, channel)
  ) ?? false;
}

/** Whether `headers` has `name` (lower case), in any case. */
function hasHeader(headers: Record<string, string> | undefined, name: string): boolean {
  return headers !== undefined && Object.keys(headers).some((h) => h.toLowerCase() === name);
}

/** A reported-state record's id: topic and user (`""` for the channel itself). */
function recordId(topic: string, user: string): string {
  return keyOf(topic, user);
}
