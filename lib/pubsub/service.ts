/**
 * Channel service functions used by both the HTTP routes and the socket channel: publish
 * (serial allocation + ordered fan-out), the retained history window, replay and info.
 */
import type { App } from "../config/apps.ts";
import type { Config } from "../config/config.ts";
import type { Hub } from "../hub/hub.ts";
import { Occupancy } from "../hub/occupancy.ts";
import type { Topic } from "../wire/topic.ts";
import {
  channelAddress,
  type LogRecord,
  ProductStream,
  SERIAL,
  type StreamAddress,
  type StreamLog,
} from "../streams/mod.ts";
import { CACHE_TTL_MS, channelKind, isCacheChannel } from "./names.ts";
import { memberOf, PresenceRegistry } from "./presence.ts";
import { RateLimiter } from "./rate_limit.ts";
import { errorFields, log } from "../log/mod.ts";
import { keyOf } from "../wire/key.ts";

/** One published event as stored in the channel log. */
export interface StoredEvent {
  event: string;
  data: unknown;
  /** Set for client publishes: who sent it. */
  client_id?: string;
  socket_id?: string;
  /** A socket that does not get it live (kept so every node of a cluster excludes it; never
   * delivered nor listed). */
  exclude?: string;
}

/** See `ChannelService.onEnter`: undefined when the join need not wait. */
export type EnterHook = (
  app: App,
  topic: Topic,
  userId: string | undefined,
) => Promise<(() => void) | void> | undefined;

/** One event of the history route. */
export interface HistoryItem extends StoredEvent {
  serial: number;
  /** Unix ms of the append. */
  published_at: number;
}

/** The wire payload of a delivered event: `{ serial, data }` plus the sender for client events. */
export function deliveryPayload(serial: number | null, e: StoredEvent): Record<string, unknown> {
  const p: Record<string, unknown> = { serial, data: e.data };
  if (e.client_id !== undefined) p.client_id = e.client_id;
  if (e.socket_id !== undefined) p.socket_id = e.socket_id;
  return p;
}

/** Trim a stream when it holds this many events more than the count bound ... */
const TRIM_SLACK_MIN = 16;
/** ... and apply the age bound at least every this many appends or milliseconds. */
const AGE_TRIM_EVERY_APPENDS = 256;
const AGE_TRIM_EVERY_MS = 30_000;

/** At most one `cache_miss` report per channel in this window (Pusher rate-limits the webhook). */
export const CACHE_MISS_EVERY_MS = 5_000;

/** Serial-numbered channels over one OrderedLog (stream `{appId}/{channel}`). */
export class ChannelService {
  readonly log: StreamLog;
  readonly streams: ProductStream<StoredEvent>;
  readonly hub: Hub;
  readonly presence: PresenceRegistry;
  /** Subscriptions per channel topic, across the nodes of a cluster. */
  readonly occupancy: Occupancy;
  readonly backendLimiter = new RateLimiter();
  readonly clientLimiter = new RateLimiter();
  #maxCount: number;
  #maxAgeMs: number;
  #trim = new Map<string, { appends: number; lastAgeTrim: number; running: boolean }>();
  #clientEventObservers:
    ((app: App, channel: string, event: StoredEvent) => void | Promise<void>)[] = [];
  #enterHooks: EnterHook[] = [];
  #cacheMissObservers: ((app: App, channel: string) => Promise<void> | void)[] = [];
  /** `{appId}\n{channel}` -> when its last cache_miss was reported. */
  #lastMiss = new Map<string, number>();

  constructor(
    log: StreamLog,
    hub: Hub,
    config: Pick<Config, "historyMaxCount" | "historyMaxAgeSeconds" | "nodeId">,
  ) {
    this.log = log;
    this.streams = new ProductStream<StoredEvent>(
      log,
      hub,
      SERIAL,
      (serial, e) => [[e.event, deliveryPayload(serial, e)]],
      (e) => e.exclude,
    );
    this.hub = hub;
    this.presence = new PresenceRegistry(config.nodeId);
    // A member joining or leaving, through this node or another, is told the same way.
    this.presence.observe((topic, userId, joined, info) => {
      hub.publish(topic, joined ? "presence:join" : "presence:leave", memberOf(userId, info));
    });
    this.occupancy = new Occupancy(hub, "pubsub");
    this.#maxCount = config.historyMaxCount;
    this.#maxAgeMs = config.historyMaxAgeSeconds * 1000;
  }

  /** Storage stream and topic of a channel. */
  address(app: App, channel: string): StreamAddress {
    return channelAddress(app, channel);
  }

  /** The Phoenix topic of a channel. */
  topic(app: App, channel: string): Topic {
    return channelAddress(app, channel).topic;
  }

  /** The log stream of a channel. */
  stream(app: App, channel: string): string {
    return channelAddress(app, channel).stream;
  }

  /**
   * Publishes events on one channel, atomically: they get contiguous serials in one durable
   * append and are broadcast in serial order after the commit. Ephemeral channels are relayed
   * only (serial null, nothing stored). Resolves with each event's serial. The socket
   * `excludeSocketId` does not get the events live (the sender of a Pusher client event, or a
   * trigger's `socket_id`).
   */
  async publish(
    app: App,
    channel: string,
    events: StoredEvent[],
    excludeSocketId?: string,
  ): Promise<(number | null)[]> {
    const addr = this.address(app, channel);
    if (channelKind(channel) === "ephemeral") {
      for (const e of events) {
        this.hub.publish(addr.topic, e.event, deliveryPayload(null, e), excludeSocketId, "cluster");
      }
      return events.map(() => null);
    }
    const entries = excludeSocketId
      ? events.map((e) => ({ ...e, exclude: excludeSocketId }))
      : events;
    const { position } = await this.streams.append(addr, () => ({ entries, result: null }));
    this.#maybeTrim(addr.stream, events.length);
    return events.map((_, i) => position + i);
  }

  /**
   * Publishes one client event (sent by a socket, whichever protocol) once every observer
   * (webhooks) has durably taken it, so no subscriber sees an event whose webhook a crash
   * could lose. Resolves with its serial; rejects, publishing nothing, when an observer fails.
   */
  async publishClient(
    app: App,
    channel: string,
    event: StoredEvent,
    excludeSocketId?: string,
  ): Promise<number | null> {
    await Promise.all(this.#clientEventObservers.map((fn) => fn(app, channel, event)));
    const [serial] = await this.publish(app, channel, [event], excludeSocketId);
    return serial;
  }

  /** Calls `fn` with every client event before it is published; the publish waits for its promise. */
  onClientEvent(fn: (app: App, channel: string, event: StoredEvent) => void | Promise<void>): void {
    this.#clientEventObservers.push(fn);
  }

  /**
   * Calls `fn` before each join enters a channel (either protocol); the join waits for the
   * promise it returns (webhooks store what the join will make observable), and the function
   * that promise resolves with runs once the join has ended, entered or not.
   */
  onEnter(fn: EnterHook): void {
    this.#enterHooks.push(fn);
  }

  /** Runs the enter hooks of a join of `topic` (by `userId` on a presence channel); resolves
   * with what to run once the join has ended. Rejects (the join fails) when a hook does. */
  async beforeEnter(app: App, topic: Topic, userId?: string): Promise<() => void> {
    const pending = this.#enterHooks.map((fn) => fn(app, topic, userId)).filter((p) =>
      p !== undefined
    );
    if (pending.length === 0) return () => {};
    const afters = await Promise.all(pending);
    return () => afters.forEach((after) => after?.());
  }

  /**
   * The cached event of a cache channel at serial `head` (its last event, if retained and at
   * most 30 minutes old), or null on a cache miss. The channel's own log is the cache: nothing
   * is stored twice, and a restart keeps it.
   */
  cached(stream: string, head: number): HistoryItem | null {
    if (head < 1) return null;
    const [last] = this.records(stream, head - 1, head, 1).records;
    if (!last || last.position !== head || last.time < Date.now() - CACHE_TTL_MS) return null;
    const { exclude: _, ...entry } = last.entry;
    return { serial: last.position, published_at: last.time, ...entry };
  }

  /**
   * Reports a cache miss on a cache channel (webhooks listen; rate-limited per channel);
   * resolves once every observer has it durably (a join holds its `pusher:cache_miss` until
   * then, so a crash cannot lose a miss a client saw).
   */
  async cacheMiss(app: App, channel: string): Promise<void> {
    const k = keyOf(app.id, channel);
    const now = Date.now();
    const last = this.#lastMiss.get(k);
    if (last !== undefined && now - last < CACHE_MISS_EVERY_MS) return;
    if (this.#lastMiss.size >= 10_000) {
      for (const [key, at] of this.#lastMiss) {
        if (now - at >= CACHE_MISS_EVERY_MS) this.#lastMiss.delete(key);
      }
    }
    this.#lastMiss.set(k, now);
    await Promise.all(this.#cacheMissObservers.map((fn) => fn(app, channel)));
  }

  /** Calls `fn` on a cache miss, at most once per channel every 5 seconds. */
  onCacheMiss(fn: (app: App, channel: string) => Promise<void> | void): void {
    this.#cacheMissObservers.push(fn);
  }

  /** Whether joins of `channel` get the cache (its name has one of Pusher's cache prefixes). */
  isCache(channel: string): boolean {
    return isCacheChannel(channel);
  }

  /** Current serial (head) of a channel; 0 when never published. */
  serial(app: App, channel: string): number {
    return this.log.head(this.stream(app, channel));
  }

  /**
   * The oldest serial still within the retention bounds (count and age), even if a lazy trim
   * has not removed older entries yet. `head + 1` when nothing is retained. Synchronous.
   */
  firstRetained(stream: string, head: number): number {
    let first = Math.max(this.log.first(stream), head - this.#maxCount + 1, 1);
    const cutoff = Date.now() - this.#maxAgeMs;
    // Usually the oldest counted entry is young enough: one read instead of a scan (a replay
    // asks once per chunk).
    const oldest = first <= head ? this.log.after(stream, first - 1, 1)[0] : undefined;
    if (oldest && oldest.position === first && oldest.time >= cutoff) return first;
    while (first <= head) {
      const chunk = this.log.after(stream, first - 1, 256);
      if (chunk.length === 0) return head + 1;
      const fresh = chunk.find((r) => r.time >= cutoff);
      if (fresh) return fresh.position;
      first = chunk[chunk.length - 1].position + 1;
    }
    return first;
  }

  /** Retained records with serial in (after, upTo], oldest first, at most `limit`. */
  records(stream: string, after: number, upTo: number, limit = Infinity): {
    records: LogRecord<StoredEvent>[];
    first: number;
  } {
    const first = this.firstRetained(stream, upTo);
    const from = Math.max(after, first - 1);
    const count = Math.min(limit, upTo - from);
    const records = count > 0 ? this.log.after<StoredEvent>(stream, from, count) : [];
    return { records: records.filter((r) => r.position <= upTo), first };
  }

  /** One history page: events after `after`, oldest first. */
  history(app: App, channel: string, after: number, limit: number) {
    if (channelKind(channel) === "ephemeral") {
      return { items: [], serial: null, first_serial: null, next: null };
    }
    const stream = this.stream(app, channel);
    const head = this.log.head(stream);
    const { records, first } = this.records(stream, after, head, limit);
    const items: HistoryItem[] = records.map((
      { position, time, entry: { exclude: _, ...entry } },
    ) => ({
      serial: position,
      published_at: time,
      ...entry,
    }));
    const last = items.length ? items[items.length - 1].serial : Math.max(after, first - 1);
    return { items, serial: head, first_serial: first, next: last < head ? last : null };
  }

  #maybeTrim(stream: string, appended: number): void {
    let t = this.#trim.get(stream);
    if (!t) this.#trim.set(stream, t = { appends: 0, lastAgeTrim: Date.now(), running: false });
    t.appends += appended;
    if (t.running) return;
    const head = this.log.head(stream);
    const slack = Math.max(TRIM_SLACK_MIN, Math.floor(this.#maxCount / 10));
    const overCount = head - this.log.first(stream) + 1 > this.#maxCount + slack;
    const ageDue = t.appends >= AGE_TRIM_EVERY_APPENDS ||
      Date.now() - t.lastAgeTrim >= AGE_TRIM_EVERY_MS;
    if (!overCount && !ageDue) return;
    t.running = true;
    const state = t;
    this.log.trim(stream, { maxCount: this.#maxCount, maxAgeMs: this.#maxAgeMs })
      .catch((err) => log.error("history trim failed", { stream, ...errorFields(err) }))
      .finally(() => {
        state.running = false;
        state.appends = 0;
        state.lastAgeTrim = Date.now();
      });
  }
}
