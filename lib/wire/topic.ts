/**
 * The one `Topic` value: the address a subscriber joins and the hub fans out on,
 * `{product}:{appKey}:{name}` (CONTRACT.md "Topics"). The product and the app key hold no `:`;
 * the name is the rest and may hold anything (a channel name, `type:key` of a Durable Object, a
 * thread id). Every layer formats and parses topics here and nowhere else; it sits in the wire
 * layer (a topic is a field of every frame) so that the hub and the socket layer, which lie below
 * the stream layer, can use it too. Products build their addresses through
 * `lib/streams/names.ts`, which re-exports it.
 */

/** A parsed topic. */
export interface Topic {
  /** The handler prefix: `pubsub`, `durable`, `chat`, `spaces`, `pusher-user`. */
  product: string;
  appKey: string;
  /** Everything after `{product}:{appKey}:`. */
  name: string;
}

/** The topic string of `t`. `product` and `appKey` must not contain `:` (see `parse`). */
function format(t: Topic): string {
  return `${t.product}:${t.appKey}:${t.name}`;
}

/**
 * Splits a topic string at its first two colons; null when it has fewer than two, or its
 * product, app key or name is empty. `parse(format(t))` is `t` for every topic whose product
 * and app key are non-empty without `:` and whose name is non-empty.
 */
function parse(topic: string): Topic | null {
  const first = topic.indexOf(":");
  if (first <= 0) return null;
  const second = topic.indexOf(":", first + 1);
  if (second < 0 || second === first + 1 || second === topic.length - 1) return null;
  return { product: topic.slice(0, first), appKey: topic.slice(first + 1, second), name: topic.slice(second + 1) };
}

/** The parsed topic if it belongs to `product`, else null (no allocation for other products). */
function parseOf(topic: string, product: string): Topic | null {
  if (!topic.startsWith(product) || topic.charCodeAt(product.length) !== 58 /* : */) return null;
  const t = parse(topic);
  return t && t.product === product ? t : null;
}

/** The common prefix `{product}:{appKey}:` of every topic of one app's product (for listings),
 * or `{product}:` of every topic of the product when no app key is given. */
function prefixOf(product: string, appKey?: string): string {
  return appKey === undefined ? `${product}:` : `${product}:${appKey}:`;
}

/** The product of a topic string (the text before its first `:`), or null. */
function productOf(topic: string): string | null {
  const i = topic.indexOf(":");
  return i <= 0 ? null : topic.slice(0, i);
}

/** `Topic.format`, `Topic.parse` and friends: the only code that knows the topic grammar. */
export const Topic = { format, parse, parseOf, prefixOf, productOf };
