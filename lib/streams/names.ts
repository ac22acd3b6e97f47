/**
 * Topic and stream naming for every ordered product, in one place. A stream id is the storage
 * key of a log (`{appId}/...`); a topic is the Phoenix topic its subscribers join
 * (`{product}:{appKey}:...`, CONTRACT.md "Topics").
 */
import type { App } from "../config/apps.ts";
import { Topic } from "../wire/topic.ts";

export { Topic };

/** Where a stream lives in storage and on the hub. */
export interface StreamAddress {
  stream: string;
  topic: string;
}

/** A Durable Object: stream `{appId}/{type}/{key}` (`%` and `/` in the type escaped, so
 * distinct pairs never share a stream), topic `durable:{appKey}:{type}:{key}`. */
export function objectAddress(app: Pick<App, "id" | "key">, type: string, key: string): StreamAddress {
  const t = type.includes("%") || type.includes("/") ? type.replaceAll("%", "%25").replaceAll("/", "%2F") : type;
  return { stream: `${app.id}/${t}/${key}`, topic: Topic.format({ product: "durable", appKey: app.key, name: `${type}:${key}` }) };
}

/** The `{type, key}` of a Durable Object topic's name `type:key` (the type holds no `:`, the
 * key is the rest), or null when it has no `:`. */
export function objectName(name: string): { type: string; key: string } | null {
  const colon = name.indexOf(":");
  return colon < 0 ? null : { type: name.slice(0, colon), key: name.slice(colon + 1) };
}

/** A channel: stream `{appId}/{channel}`, topic `pubsub:{appKey}:{channel}`. */
export function channelAddress(app: Pick<App, "id" | "key">, channel: string): StreamAddress {
  return { stream: `${app.id}/${channel}`, topic: Topic.format({ product: "pubsub", appKey: app.key, name: channel }) };
}

/** A chat thread: stream `{appId}/{threadId}`, topic `chat:{appKey}:{threadId}`. */
export function threadAddress(app: Pick<App, "id" | "key">, threadId: string): StreamAddress {
  return { stream: `${app.id}/${threadId}`, topic: Topic.format({ product: "chat", appKey: app.key, name: threadId }) };
}
