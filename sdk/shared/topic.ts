/**
 * The one `Topic` value: the address a subscriber joins and the hub fans out on,
 * `{product}:{appKey}:{name}` (docs/protocol.md "Topics"). The product and the app key hold no `:`;
 * the name is the rest and may hold anything (a channel name, `type:key` of a Durable Object, a
 * thread id). Every layer formats and parses topics here and nowhere else: a topic string is
 * parsed once where it enters (a frame, a cluster message) and travels as a `Topic` value. It
 * sits in the wire layer (a topic is a field of every frame) so that the hub and the socket
 * layer, which lie below the stream layer, can use it too. Products build their addresses through
 * `lib/streams/names.ts`, which re-exports it. The code lives in `sdk/shared/` because the client
 * SDK addresses its channels, objects and threads with the same grammar; the server reaches it
 * through `lib/wire/topic.ts`.
 */

/**
 * A parsed topic. It carries its topic string (`key`), made once when the value is made
 * (`Topic.of`, or the string `Topic.parse` was given), so the hub keys its table and writes
 * frames with it without formatting or parsing again on the fan-out path. Two values with the
 * same `key` are the same address (`Topic.same`).
 */
export interface Topic {
  /** The handler prefix: `pubsub`, `durable`, `chat`, `spaces`, `pusher-user`. */
  readonly product: string;
  readonly appKey: string;
  /** Everything after `{product}:{appKey}:`. */
  readonly name: string;
  /** The topic string `{product}:{appKey}:{name}` (the frame's topic field). */
  readonly key: string;
}

/** The topic of `product`, `appKey` and `name`, which must be non-empty, the first two
 * without `:` (see `parse`). */
function of(product: string, appKey: string, name: string): Topic {
  return { product, appKey, name, key: `${product}:${appKey}:${name}` };
}

/**
 * Splits a topic string at its first two colons; null when it has fewer than two, or its
 * product, app key or name is empty. `parse(of(p, a, n).key)` is `of(p, a, n)` for every
 * product and app key non-empty without `:` and every non-empty name.
 */
function parse(topic: string): Topic | null {
  const first = topic.indexOf(":");
  if (first <= 0) return null;
  const second = topic.indexOf(":", first + 1);
  if (second < 0 || second === first + 1 || second === topic.length - 1) return null;
  return {
    product: topic.slice(0, first),
    appKey: topic.slice(first + 1, second),
    name: topic.slice(second + 1),
    key: topic,
  };
}

/** The parsed topic if it belongs to `product`, else null (no allocation for other products). */
function parseOf(topic: string, product: string): Topic | null {
  if (!topic.startsWith(product) || topic.charCodeAt(product.length) !== 58 /* : */) return null;
  const t = parse(topic);
  return t && t.product === product ? t : null;
}

/** Whether `a` and `b` are the same address. */
function same(a: Topic, b: Topic): boolean {
  return a.key === b.key;
}

/** Orders topics by their strings (for listings; `Array.prototype.sort`'s order of them). */
function order(a: Topic, b: Topic): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The product of a topic string (the text before its first `:`), or null. */
function productOf(topic: string): string | null {
  const i = topic.indexOf(":");
  return i <= 0 ? null : topic.slice(0, i);
}

/** `Topic.of`, `Topic.parse` and friends: the only code that knows the topic grammar. */
export const Topic = { of, parse, parseOf, same, order, productOf };
