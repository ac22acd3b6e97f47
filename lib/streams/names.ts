/**
 * Topic and stream naming for every ordered product, in one place. A stream id is the storage
 * key of a log (`{appId}/...`); a topic is the Phoenix topic its subscribers join
 * (`{product}:{appKey}:...`, docs/protocol.md "Topics").
 */
import type { App } from "../config/apps.ts";
import { Topic } from "../wire/topic.ts";

export { Topic };

/** Where a stream lives in storage and on the hub. */
export interface StreamAddress {
  stream: string;
  topic: Topic;
}

/** A Durable Object: stream `{appId}/{type}/{key}` (`%` and `/` in the type escaped, so
 * distinct pairs never share a stream), topic `durable:{appKey}:{type}:{key}`. */
export function objectAddress(
  app: Pick<App, "id" | "key">,
  type: string,
  key: string,
): StreamAddress {
  return {
    stream: `${app.id}/${escapeType(type)}/${key}`,
    topic: Topic.of("durable", app.key, `${type}:${key}`),
  };
}

/** An object type as its stream ids spell it (`%` and `/` escaped). */
function escapeType(type: string): string {
  return type.includes("%") || type.includes("/")
    ? type.replaceAll("%", "%25").replaceAll("/", "%2F")
    : type;
}

/** The common start of the stream ids of the app's objects whose type starts with
 * `typePrefix` (for listings in stream order). */
export function objectStreamPrefix(app: Pick<App, "id">, typePrefix = ""): string {
  return `${app.id}/${escapeType(typePrefix)}`;
}

/** The `{type, key}` of one of the app's object stream ids (see `objectAddress`), or null
 * when `stream` is not one. */
export function objectOfStream(
  app: Pick<App, "id">,
  stream: string,
): { type: string; key: string } | null {
  const base = `${app.id}/`;
  if (!stream.startsWith(base)) return null;
  const slash = stream.indexOf("/", base.length);
  if (slash < 0) return null;
  const type = stream.slice(base.length, slash).replaceAll("%2F", "/").replaceAll("%25", "%");
  return { type, key: stream.slice(slash + 1) };
}

/** The `{type, key}` of a Durable Object topic's name `type:key` (the type holds no `:`, the
 * key is the rest), or null when it has no `:`. */
export function objectName(name: string): { type: string; key: string } | null {
  const colon = name.indexOf(":");
  return colon < 0 ? null : { type: name.slice(0, colon), key: name.slice(colon + 1) };
}

/** A channel: stream `{appId}/{channel}`, topic `pubsub:{appKey}:{channel}`. */
export function channelAddress(app: Pick<App, "id" | "key">, channel: string): StreamAddress {
  return { stream: `${app.id}/${channel}`, topic: Topic.of("pubsub", app.key, channel) };
}

/** A chat thread: stream `{appId}/{threadId}`, topic `chat:{appKey}:{threadId}`. */
export function threadAddress(app: Pick<App, "id" | "key">, threadId: string): StreamAddress {
  return { stream: `${app.id}/${threadId}`, topic: Topic.of("chat", app.key, threadId) };
}
