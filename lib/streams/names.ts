/**
 * Topic and stream naming for every ordered product, in one place. A stream id is the storage
 * key of a log (`{appId}/...`, made by `keyOf`, lib/wire/key.ts: distinct tuples never share a
 * stream; each product's log holds one arity); a topic is the Phoenix topic its subscribers join
 * (`{product}:{appKey}:...`, docs/protocol.md "Topics"; the app key holds no `:`).
 */
import type { App } from "../config/apps.ts";
import { keyOf, keyPrefix, splitKey } from "../wire/key.ts";
import { Topic } from "../wire/topic.ts";

export { Topic };

/** Where a stream lives in storage and on the hub. */
export interface StreamAddress {
  stream: string;
  topic: Topic;
}

/** A Durable Object: stream `keyOf(appId, type, key)`, i.e. `{appId}/{type}/{key}` with `%`
 * and `/` in the type escaped, topic `durable:{appKey}:{type}:{key}`. */
export function objectAddress(
  app: Pick<App, "id" | "key">,
  type: string,
  key: string,
): StreamAddress {
  return {
    stream: keyOf(app.id, type, key),
    topic: Topic.of("durable", app.key, `${type}:${key}`),
  };
}

/** The common start of the stream ids of the app's objects whose type starts with
 * `typePrefix` (for listings in stream order). */
export function objectStreamPrefix(app: Pick<App, "id">, typePrefix = ""): string {
  return keyPrefix([app.id], typePrefix);
}

/** The `{type, key}` of one of the app's object stream ids (see `objectAddress`), or null
 * when `stream` is not one. */
export function objectOfStream(
  app: Pick<App, "id">,
  stream: string,
): { type: string; key: string } | null {
  const parts = splitKey(stream, 3);
  if (!parts || parts[0] !== app.id) return null;
  return { type: parts[1], key: parts[2] };
}

/** The `{type, key}` of a Durable Object topic's name `type:key` (the type holds no `:`, the
 * key is the rest), or null when it has no `:`. */
export function objectName(name: string): { type: string; key: string } | null {
  const colon = name.indexOf(":");
  return colon < 0 ? null : { type: name.slice(0, colon), key: name.slice(colon + 1) };
}

/** A channel: stream `keyOf(appId, channel)` (`{appId}/{channel}`), topic
 * `pubsub:{appKey}:{channel}`. */
export function channelAddress(app: Pick<App, "id" | "key">, channel: string): StreamAddress {
  return { stream: keyOf(app.id, channel), topic: Topic.of("pubsub", app.key, channel) };
}

/** A chat thread: stream `keyOf(appId, threadId)` (`{appId}/{threadId}`), topic
 * `chat:{appKey}:{threadId}`. */
export function threadAddress(app: Pick<App, "id" | "key">, threadId: string): StreamAddress {
  return { stream: keyOf(app.id, threadId), topic: Topic.of("chat", app.key, threadId) };
}
