import { encodeFrame, type WireFormat } from "../socket/codec.ts";

/** One receiver of broadcasts: in practice a socket connection. */
export interface Subscriber {
  readonly format: WireFormat;
  /** Sends already-encoded frame bytes; the subscriber enforces its own buffer bound. */
  sendEncoded(data: string | Uint8Array): void;
}

/**
 * Topic -> subscribers, with encode-once fan-out. A broadcast frame has a null join_ref, so
 * the same bytes fit every member of a topic and are encoded at most once per wire format.
 * Delivery order per topic is call order; callers (the ordered log's publish hooks) call in
 * position order, so every subscriber sees a stream in order.
 */
export class Hub {
  #topics = new Map<string, Set<Subscriber>>();

  /** Adds `sub` to `topic`. */
  subscribe(topic: string, sub: Subscriber): void {
    let set = this.#topics.get(topic);
    if (!set) this.#topics.set(topic, (set = new Set()));
    set.add(sub);
  }

  /** Removes `sub` from `topic`. */
  unsubscribe(topic: string, sub: Subscriber): void {
    const set = this.#topics.get(topic);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.#topics.delete(topic);
  }

  /** Number of subscribers on `topic`. */
  count(topic: string): number {
    return this.#topics.get(topic)?.size ?? 0;
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
    const set = this.#topics.get(topic);
    if (!set || set.size === 0) return 0;
    const encoded: Partial<Record<WireFormat, string | Uint8Array>> = {};
    let sent = 0;
    // Copy: a send may close a slow subscriber, which unsubscribes it during iteration.
    for (const sub of [...set]) {
      if (sub === exclude) continue;
      const bytes = encoded[sub.format] ??= encodeFrame([null, null, topic, event, payload], sub.format);
      sub.sendEncoded(bytes);
      sent++;
    }
    return sent;
  }
}
