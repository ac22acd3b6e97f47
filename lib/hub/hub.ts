// The hub: topic -> subscribers, with encode-once fan-out per wire format (natively under
// Bun), `exclude` by socket id, one publish path (`publish`, its `reach` saying whether other
// nodes of a cluster get the event too), and the hooks a cluster uses to relay and observe them.
// Topics are `Topic` values parsed once where they enter (a frame, a cluster message); the hub
// keys its table by their `key` and never parses nor formats a topic.
import { encodeFrame, type Frame } from "../wire/codec.ts";
import type { Topic } from "../wire/topic.ts";
import { record } from "../metrics/mod.ts";
import { tap, tapActive } from "../debug/tap.ts";
import { keyOf } from "../wire/key.ts";

/** One receiver of broadcasts: in practice a socket connection. */
export interface Subscriber {
  /** Unique among live sockets (the `socket_id` clients are told). */
  readonly socketId: string;
  /** The name of the encoder this subscriber's frames use (`json`, `msgpack`, `pusher`). */
  readonly format: string;
  /** Sends already-encoded frame bytes; the subscriber enforces its own buffer bound. */
  sendEncoded(data: string | Uint8Array): void;
  /** Runtime-native topic membership (Bun), when the subscriber's socket supports it. */
  nativeSubscribe?(name: string): void;
  nativeUnsubscribe?(name: string): void;
  /** Publishes to a native topic from this socket: every member but this one receives it. */
  nativePublish?(name: string, data: string | Uint8Array): void;
}

/**
 * Turns one broadcast (on `topic`, the frame's topic parsed) into the bytes of one wire format;
 * `null` when subscribers of that format do not get this event at all.
 */
export type FrameEncoder = (frame: Frame, topic: Topic) => string | Uint8Array | null;

/** The runtime's own pub/sub (Bun's `server.publish`), which fans out in native code. */
export interface NativeTopics {
  publish(name: string, data: string | Uint8Array): void;
}

/** The members of one topic that use one wire format. */
interface FormatMembers {
  count: number;
  /** The runtime-native topic name of this topic and format (made once). */
  native: string;
}

interface TopicMembers {
  /** The address, as the first subscriber gave it. */
  topic: Topic;
  subs: Set<Subscriber>;
  /** Members per wire format, so a native publish is skipped for formats nobody uses. */
  formats: Map<string, FormatMembers>;
}

/**
 * Where a published event goes: `"node"`, the subscribers on this node (a logged entry: every
 * node publishes it as it applies the log); `"cluster"`, also every other node of a cluster
 * (an event kept in no log: ephemeral channels, token roll-ups, events to a user).
 */
export type Reach = "node" | "cluster";

/** Told of a published event: its topic and payload. */
export type PublishObserver = (topic: Topic, payload: unknown) => void;

/** Carries a `"cluster"` publish to the other nodes. */
export type Relay = (
  topic: Topic,
  event: string,
  payload: unknown,
  excludeSocketId?: string,
) => void;

/** Native topic name for one Phoenix topic and one wire format. */
const nativeName = (topic: Topic, format: string) => keyOf(format, topic.key);

/**
 * Topic -> subscribers, with encode-once fan-out. A broadcast frame has a null join_ref, so the
 * same bytes fit every member of a topic and are encoded at most once per wire format. Under Bun
 * the bytes are handed to the runtime's native topics (docs/design.md "Fan-out via Bun's native
 * topics"); under Deno a JS loop sends them. Delivery order per topic is call order; callers (the
 * ordered log's publish hooks) call in position order, so every subscriber sees a stream in order.
 *
 * Wire formats are pluggable: Phoenix JSON and MessagePack are built in; a protocol adapter
 * (the Pusher protocol) adds its own encoder with `addFormat`.
 */
export class Hub {
  #topics = new Map<string, TopicMembers>();
  /** Per product, its topics with a subscriber: `count` answers 0 for a product with none
   * without looking the topic up (most durable writes). */
  #products = new Map<string, number>();
  #native?: NativeTopics;
  #encoders = new Map<string, FrameEncoder>([
    ["json", (frame) => encodeFrame(frame, "json")],
    ["msgpack", (frame) => encodeFrame(frame, "msgpack")],
  ]);
  #sockets = new Map<string, Subscriber>();
  #subscriptions: ((topic: Topic, count: number, delta: 1 | -1) => void)[] = [];
  #owns: (topic: Topic) => boolean = () => true;
  #ownerGone: ((wasOwner: (topic: Topic) => boolean) => void)[] = [];
  #relay?: Relay;
  /** Event name -> observers of its publishes (see `observe`). */
  #observers = new Map<string, PublishObserver[]>();

  /** Switches fan-out to the runtime's native topics (set by the Bun adapter). */
  useNative(native: NativeTopics): void {
    this.#native = native;
  }

  /** Carries `"cluster"` publishes to the other nodes (set by the cluster's bus). */
  useRelay(fn: Relay): void {
    this.#relay = fn;
  }

  /** An event another node published with reach `"cluster"` (its topic parsed by the bus):
   * published here like one of this node's, observers included. */
  relayed(topic: Topic, event: string, payload: unknown, excludeSocketId?: string): void {
    this.publish(topic, event, payload, excludeSocketId);
  }

  /** Calls `fn` for every publish of `event`, made on this node or relayed from another one
   * alike, before its subscribers get it. */
  observe(event: string, fn: PublishObserver): void {
    const fns = this.#observers.get(event);
    if (fns) fns.push(fn);
    else this.#observers.set(event, [fn]);
  }

  /** Registers the encoder of another wire format. */
  addFormat(name: string, encode: FrameEncoder): void {
    this.#encoders.set(name, encode);
  }

  /** Calls `fn` with a topic's new subscriber count whenever a subscriber joins (`delta` 1)
   * or leaves (-1). */
  onSubscriptions(fn: (topic: Topic, count: number, delta: 1 | -1) => void): void {
    this.#subscriptions.push(fn);
  }

  /** Sets who reports a topic's cluster-wide changes (set by the cluster: one node each). */
  useOwner(fn: (topic: Topic) => boolean): void {
    this.#owns = fn;
  }

  /** Whether this node is the one that reports cluster-wide changes of `topic` (webhooks);
   * alone, always. */
  owns(topic: Topic): boolean {
    return this.#owns(topic);
  }

  /** Calls `fn` when an owner node left the cluster, after the cluster dropped what it held;
   * `wasOwner(topic)` tells whether the topic was that node's (webhooks: the new owners
   * report what it may not have reported). */
  onOwnerGone(fn: (wasOwner: (topic: Topic) => boolean) => void): void {
    this.#ownerGone.push(fn);
  }

  /** A node left the cluster: `wasOwner(topic)` tells which topics it owned (set by the cluster). */
  ownerGone(wasOwner: (topic: Topic) => boolean): void {
    for (const fn of this.#ownerGone) fn(wasOwner);
  }

  /** Makes a live socket findable by its socket id (for `exclude`). */
  attach(sub: Subscriber): void {
    this.#sockets.set(sub.socketId, sub);
  }

  /** Forgets a closed socket. */
  detach(sub: Subscriber): void {
    if (this.#sockets.get(sub.socketId) === sub) this.#sockets.delete(sub.socketId);
  }

  /** Adds `sub` to `topic`. */
  subscribe(topic: Topic, sub: Subscriber): void {
    let members = this.#topics.get(topic.key);
    if (!members) {
      members = { topic, subs: new Set(), formats: new Map() };
      this.#topics.set(topic.key, members);
      this.#products.set(topic.product, (this.#products.get(topic.product) ?? 0) + 1);
    }
    if (members.subs.has(sub)) return;
    members.subs.add(sub);
    let format = members.formats.get(sub.format);
    if (!format) {
      members.formats.set(sub.format, format = { count: 0, native: nativeName(topic, sub.format) });
    }
    format.count++;
    sub.nativeSubscribe?.(format.native);
    for (const fn of this.#subscriptions) fn(members.topic, members.subs.size, 1);
  }

  /** Removes `sub` from `topic`. */
  unsubscribe(topic: Topic, sub: Subscriber): void {
    const members = this.#topics.get(topic.key);
    if (!members || !members.subs.delete(sub)) return;
    const format = members.formats.get(sub.format)!;
    format.count--;
    sub.nativeUnsubscribe?.(format.native);
    if (members.subs.size === 0) {
      this.#topics.delete(topic.key);
      const left = this.#products.get(topic.product)! - 1;
      if (left === 0) this.#products.delete(topic.product);
      else this.#products.set(topic.product, left);
    }
    for (const fn of this.#subscriptions) fn(members.topic, members.subs.size, -1);
  }

  /** Number of subscribers on `topic`. */
  count(topic: Topic): number {
    if (!this.#products.has(topic.product)) return 0;
    return this.#topics.get(topic.key)?.subs.size ?? 0;
  }

  /** Topics of `product` with at least one subscriber, only those of `appKey` when given. */
  topics(product: string, appKey?: string): Topic[] {
    const out: Topic[] = [];
    for (const { topic } of this.#topics.values()) {
      if (topic.product === product && (appKey === undefined || topic.appKey === appKey)) {
        out.push(topic);
      }
    }
    return out;
  }

  /**
   * Broadcasts `[null, null, topic, event, payload]` to every subscriber of `topic`, except
   * the socket whose id is `excludeSocketId`; with reach `"cluster"` (see `Reach`) it is also
   * relayed to the other nodes, which publish it there. Observers of `event` (see `observe`)
   * see it first. Returns how many subscribers on this node it was sent to.
   */
  publish(
    topic: Topic,
    event: string,
    payload: unknown,
    excludeSocketId?: string,
    reach: Reach = "node",
  ): number {
    if (reach === "cluster") this.#relay?.(topic, event, payload, excludeSocketId);
    if (this.#observers.size !== 0) {
      const fns = this.#observers.get(event);
      if (fns) { for (const fn of fns) fn(topic, payload); }
    }
    if (tapActive) {
      tap(topic.appKey, "event", {
        topic: topic.key,
        event,
        payload,
        subscribers: this.count(topic),
      });
    }
    const members = this.#topics.get(topic.key);
    if (!members) return 0;
    const frame: Frame = [null, null, topic.key, event, payload];
    const exclude = excludeSocketId === undefined ? undefined : this.#sockets.get(excludeSocketId);
    const excluded = exclude && members.subs.has(exclude) ? 1 : 0;
    if (this.#native) {
      for (const [name, format] of members.formats) {
        if (format.count === 0) continue;
        const bytes = this.#encoders.get(name)!(frame, topic);
        if (bytes === null) continue;
        if (excluded && exclude!.format === name && exclude!.nativePublish) {
          exclude!.nativePublish(format.native, bytes);
        } else this.#native.publish(format.native, bytes);
      }
      record.publish(topic.product, members.subs.size - excluded);
      return members.subs.size - excluded;
    }
    const encoded = new Map<string, string | Uint8Array | null>();
    // Copy: a send may close a slow subscriber, which unsubscribes it during iteration.
    for (const sub of [...members.subs]) {
      if (sub === exclude) continue;
      let bytes = encoded.get(sub.format);
      if (bytes === undefined) {
        encoded.set(sub.format, bytes = this.#encoders.get(sub.format)!(frame, topic));
      }
      if (bytes !== null) sub.sendEncoded(bytes);
    }
    record.publish(topic.product, members.subs.size - excluded);
    return members.subs.size - excluded;
  }
}
