import { encodeFrame, type WireFormat } from "../wire/codec.ts";
import { record } from "../metrics/mod.ts";
import { appKeyOfTopic, tap, tapActive } from "../debug/tap.ts";

/** One receiver of broadcasts: in practice a socket connection. */
export interface Subscriber {
  readonly format: WireFormat;
  /** Sends already-encoded frame bytes; the subscriber enforces its own buffer bound. */
  sendEncoded(data: string | Uint8Array): void;
  /** Runtime-native topic membership (Bun), when the subscriber's socket supports it. */
  nativeSubscribe?(name: string): void;
  nativeUnsubscribe?(name: string): void;
  /** Publishes to a native topic from this socket: every member but this one receives it. */
  nativePublish?(name: string, data: string | Uint8Array): void;
}

/** The runtime's own pub/sub (Bun's `server.publish`), which fans out in native code. */
export interface NativeTopics {
  publish(name: string, data: string | Uint8Array): void;
}

interface TopicMembers {
  subs: Set<Subscriber>;
  /** Members per wire format, so a native publish is skipped for formats nobody uses. */
  formats: Record<WireFormat, number>;
}

/** Native topic name for one Phoenix topic and one wire format. */
const nativeName = (topic: string, format: WireFormat) => `${format}|${topic}`;

/**
 * Topic -> subscribers, with encode-once fan-out. A broadcast frame has a null join_ref, so
 * the same bytes fit every member of a topic and are encoded at most once per wire format.
 * Under Bun the bytes are handed to the runtime's native topics (DESIGN.md "Fan-out"); under
 * Deno a JS loop sends them. Delivery order per topic is call order; callers (the ordered
 * log's publish hooks) call in position order, so every subscriber sees a stream in order.
 */
export class Hub {
  #topics = new Map<string, TopicMembers>();
  #native?: NativeTopics;

  /** Switches fan-out to the runtime's native topics (set by the Bun adapter). */
  useNative(native: NativeTopics): void {
    this.#native = native;
  }

  /** Adds `sub` to `topic`. */
  subscribe(topic: string, sub: Subscriber): void {
    let members = this.#topics.get(topic);
    if (!members) {
      members = { subs: new Set(), formats: { json: 0, msgpack: 0 } };
      this.#topics.set(topic, members);
    }
    if (members.subs.has(sub)) return;
    members.subs.add(sub);
    members.formats[sub.format]++;
    sub.nativeSubscribe?.(nativeName(topic, sub.format));
  }

  /** Removes `sub` from `topic`. */
  unsubscribe(topic: string, sub: Subscriber): void {
    const members = this.#topics.get(topic);
    if (!members || !members.subs.delete(sub)) return;
    members.formats[sub.format]--;
    sub.nativeUnsubscribe?.(nativeName(topic, sub.format));
    if (members.subs.size === 0) this.#topics.delete(topic);
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
   * `exclude` when given. Returns how many subscribers it was sent to.
   */
  publish(topic: string, event: string, payload: unknown, exclude?: Subscriber): number {
    if (tapActive) {
      const app = appKeyOfTopic(topic);
      if (app) tap(app, "event", { topic, event, payload });
    }
    const members = this.#topics.get(topic);
    if (!members) return 0;
    const frame: [null, null, string, string, unknown] = [null, null, topic, event, payload];
    const excluded = exclude && members.subs.has(exclude) ? 1 : 0;
    if (this.#native) {
      for (const format of ["json", "msgpack"] as const) {
        if (members.formats[format] === 0) continue;
        const bytes = encodeFrame(frame, format);
        const name = nativeName(topic, format);
        if (excluded && exclude!.format === format && exclude!.nativePublish) {
          exclude!.nativePublish(name, bytes);
        } else this.#native.publish(name, bytes);
      }
      record.publish(topic, members.subs.size - excluded);
      return members.subs.size - excluded;
    }
    const encoded: Partial<Record<WireFormat, string | Uint8Array>> = {};
    // Copy: a send may close a slow subscriber, which unsubscribes it during iteration.
    for (const sub of [...members.subs]) {
      if (sub === exclude) continue;
      sub.sendEncoded(encoded[sub.format] ??= encodeFrame(frame, sub.format));
    }
    record.publish(topic, members.subs.size - excluded);
    return members.subs.size - excluded;
  }
}
