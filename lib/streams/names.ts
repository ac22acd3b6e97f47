/**
 * Topic and stream naming for every ordered product, in one place. A stream id is the storage
 * key of a log (`{appId}/...`); a topic is the Phoenix topic its subscribers join
 * (`{product}:{appKey}:...`, CONTRACT.md "Topics").
 */
import type { App } from "../config/apps.ts";

/** Where a stream lives in storage and on the hub. */
export interface StreamAddress {
  stream: string;
  topic: string;
}

/** A Durable Object: stream `{appId}/{type}/{key}` (`%` and `/` in the type escaped, so
 * distinct pairs never share a stream), topic `durable:{appKey}:{type}:{key}`. */
export function objectAddress(app: Pick<App, "id" | "key">, type: string, key: string): StreamAddress {
  const t = type.includes("%") || type.includes("/") ? type.replaceAll("%", "%25").replaceAll("/", "%2F") : type;
  return { stream: `${app.id}/${t}/${key}`, topic: `durable:${app.key}:${type}:${key}` };
}

/** A channel: stream `{appId}/{channel}`, topic `pubsub:{appKey}:{channel}`. */
export function channelAddress(app: Pick<App, "id" | "key">, channel: string): StreamAddress {
  return { stream: `${app.id}/${channel}`, topic: `pubsub:${app.key}:${channel}` };
}

/** A chat thread: stream `{appId}/{threadId}`, topic `chat:{appKey}:{threadId}`. */
export function threadAddress(app: Pick<App, "id" | "key">, threadId: string): StreamAddress {
  return { stream: `${app.id}/${threadId}`, topic: `chat:${app.key}:${threadId}` };
}
