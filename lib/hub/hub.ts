// The hub: topic -> subscribers, with encode-once fan-out per wire format (natively under
// Bun), `exclude` by socket id, one publish path (`publish`, its `reach` saying whether other
// nodes of a cluster get the event too), and the hooks a cluster uses to relay and observe them.
import { encodeFrame, type Frame } from "../wire/codec.ts";
import { record } from "../metrics/mod.ts";
import { appKeyOfTopic, tap, tapActive } from "../debug/tap.ts";

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
 * Turns one broadcast into the bytes of one wire format; `null` when subscribers of that
 * format do not get this event at all.
 */
export type FrameEncoder = (frame: Frame) => string | Uint8Array | null;

/** The runtime's own pub/sub (Bun's `server.publish`), which fans out in native code. */
export interface NativeTopics {
  publish(name: string, data: string | Uint8Array): void;
}

interface TopicMembers {
  subs: Set<Subscriber>;
  /** Members per wire format, so a native publish is skipped for formats nobody uses. */
  formats: Map<string, number>;
}

/**
 * Where a published event goes: `"node"`, the subscribers on this node (a logged entry: every
 * node publishes it as it applies the log); `"cluster"`, also every other node of a cluster
 * (an event kept in no log: ephemeral channels, token roll-ups, events to a user).
 */
export type Reach = "node" | "cluster";

/** Native topic name for one Phoenix topic and one wire format. */
const nativeName = (topic: string, format: string) => `${format}|${topic}`;

/**
 * Topic -> subscribers, with encode-once fan-out. A broadcast frame has a null join_ref, so
 * the same bytes fit every member of a topic and are encoded at most once per wire format.
 * Under Bun the bytes are handed to the runtime's native topics (DESIGN.md "Fan-out"); under
 * Deno a JS loop sends them. Delivery order per topic is call order; callers (the ordered
 * log's publish hooks) call in position order, so every subscriber sees a stream in order.
 *
 * Wire formats are pluggable: Phoenix JSON and MessagePack are built in; a protocol adapter
 * (the Pusher protocol) adds its own encoder with `addFormat`.
 */
export class Hub {
  #topics = new Map<string, TopicMembers>();
  #native?: NativeTopics;
  #encoders = new Map<string, FrameEncoder>([
    ["json", (frame) => encodeFrame(frame, "json")],
    ["msgpack", (frame) => encodeFrame(frame, "msgpack")],
  ]);
  #sockets = new Map<string, Subscriber>();
  #subscriptions: ((topic: string, count: number, delta: 1 | -1) => void)[] = [];
  #owns: (topic: string) => boolean = () => true;
  #ownerGone: ((wasOwner: (topic: string) => boolean) => void)[] = [];
  #relay?: (topic: string, event: string, payload: unknown, excludeSocketId?: string) => void;
  #relayedObservers: ((topic: string, event: string, payload: unknown) => void)[] = [];

  /** Switches fan-out to the runtime's native topics (set by the Bun adapter). */
  useNative(native: NativeTopics): void {
    this.#native = native;
  }

  /** Carries `"cluster"` publishes to the other nodes (set by the cluster's bus). */
  useRelay(fn: (topic: string, event: string, payload: unknown, excludeSocketId?: string) => void): void {
    this.#relay = fn;
  }

  /** An event another node published with reach `"cluster"`: observers see it, then local
   * subscribers get it. */
  relayed(topic: string, event: string, payload: unknown, excludeSocketId?: string): void {
    for (const fn of this.#relayedObservers) fn(topic, event, payload);
    this.publish(topic, event, payload, excludeSocketId);
  }

  /** Calls `fn` for every event relayed from another node (see `relayed`). */
  onRelayed(fn: (topic: string, event: string, payload: unknown) => void): void {
    this.#relayedObservers.push(fn);
  }

  /** Registers the encoder of another wire format. */
  addFormat(name: string, encode: FrameEncoder): void {
    this.#encoders.set(name, encode);
  }

  /** Calls `fn` with a topic's new subscriber count whenever a subscriber joins (`delta` 1)
   * or leaves (-1). */
  onSubscriptions(fn: (topic: string, count: number, delta: 1 | -1) => void): void {
    this.#subscriptions.push(fn);
  }

  /** Sets who reports a topic's cluster-wide changes (set by the cluster: one node each). */
  useOwner(fn: (topic: string) => boolean): void {
    this.#owns = fn;
  }

  /** Whether this node is the one that reports cluster-wide changes of `topic` (webhooks);
   * alone, always. */
  owns(topic: string): boolean {
    return this.#owns(topic);
  }

  /** Calls `fn` when an owner node left the cluster, after the cluster dropped what it held;
   * `wasOwner(topic)` tells whether the topic was that node's (webhooks: the new owners
   * report what it may not have reported). */
  onOwnerGone(fn: (wasOwner: (topic: string) => boolean) => void): void {
    this.#ownerGone.push(fn);
  }

  /** A node left the cluster: `wasOwner(topic)` tells which topics it owned (set by the cluster). */
  ownerGone(wasOwner: (topic: string) => boolean): void {
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
  subscribe(topic: string, sub: Subscriber): void {
    let members = this.#topics.get(topic);
    if (!members) {
      members = { subs: new Set(), formats: new Map() };
      this.#topics.set(topic, members);
    }
    if (members.subs.has(sub)) return;
    members.subs.add(sub);
    members.formats.set(sub.format, (members.formats.get(sub.format) ?? 0) + 1);
    sub.nativeSubscribe?.(nativeName(topic, sub.format));
    for (const fn of this.#subscriptions) fn(topic, members.subs.size, 1);
  }

  /** Removes `sub` from `topic`. */
  unsubscribe(topic: string, sub: Subscriber): void {
    const members = this.#topics.get(topic);
    if (!members || !members.subs.delete(sub)) return;
    members.formats.set(sub.format, members.formats.get(sub.format)! - 1);
    sub.nativeUnsubscribe?.(nativeName(topic, sub.format));
    if (members.subs.size === 0) this.#topics.delete(topic);
    for (const fn of this.#subscriptions) fn(topic, members.subs.size, -1);
  }

  /** Number of subscribers on `topic`. */
  count(topic: string): number {
    return this.#topics.get(topic)?.subs.size ?? 0;
  }

  /** Topics with at least one subscriber, optionally filtered by prefix. */
  topics(prefix = ""): string[] {
    return [...this.#topics.keys()].filter((t) => t.startsWith(prefix));
  }

  /**
   * Broadcasts `[null, null, topic, event, payload]` to every subscriber of `topic`, except
   * the socket whose id is `excludeSocketId`; with reach `"cluster"` (see `Reach`) it is also
   * relayed to the other nodes, which publish it there. Returns how many subscribers on this
   * node it was sent to.
   */
  publish(topic: string, event: string, payload: unknown, excludeSocketId?: string, reach: Reach = "node"): number {
    if (reach === "cluster") this.#relay?.(topic, event, payload, excludeSocketId);
    if (tapActive) {
      const app = appKeyOfTopic(topic);
      if (app) tap(app, "event", { topic, event, payload, subscribers: this.count(topic) });
    }
    const members = this.#topics.get(topic);
    if (!members) return 0;
    const frame: Frame = [null, null, topic, event, payload];
    const exclude = excludeSocketId === undefined ? undefined : this.#sockets.get(excludeSocketId);
    const excluded = exclude && members.subs.has(exclude) ? 1 : 0;
    if (this.#native) {
      for (const [format, count] of members.formats) {
        if (count === 0) continue;
        const bytes = this.#encoders.get(format)!(frame);
        if (bytes === null) continue;
        const name = nativeName(topic, format);
        if (excluded && exclude!.format === format && exclude!.nativePublish) {
          exclude!.nativePublish(name, bytes);
        } else this.#native.publish(name, bytes);
      }
      record.publish(topic, members.subs.size - excluded);
      return members.subs.size - excluded;
    }
    const encoded = new Map<string, string | Uint8Array | null>();
    // Copy: a send may close a slow subscriber, which unsubscribes it during iteration.
    for (const sub of [...members.subs]) {
      if (sub === exclude) continue;
      let bytes = encoded.get(sub.format);
      if (bytes === undefined) encoded.set(sub.format, bytes = this.#encoders.get(sub.format)!(frame));
      if (bytes !== null) sub.sendEncoded(bytes);
    }
    record.publish(topic, members.subs.size - excluded);
    return members.subs.size - excluded;
  }
}
