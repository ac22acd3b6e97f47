/**
 * Topic checks of the socket layer: a joined topic must parse (`Topic.parse`), name a
 * registered handler and the connected app.
 */
import { Topic } from "../wire/topic.ts";

/** A parsed topic: the handler prefix, the app key and the part after `{prefix}:{appKey}:`. */
export interface ParsedTopic {
  prefix: string;
  appKey: string;
  name: string;
}

/**
 * Splits `{prefix}:{appKey}:{rest}` (CONTRACT.md "Topics"). The socket layer knows no product:
 * `known` is the set of prefixes channel handlers registered. Returns the spec's join error
 * reason when the shape is wrong, no handler owns the prefix, or the app key is not the
 * connected app's. Product-specific name rules (a Durable Object's `type:key`) belong to the
 * handler.
 */
export function parseTopic(
  topic: string,
  connectedAppKey: string,
  known: (prefix: string) => boolean,
): ParsedTopic | string {
  const t = Topic.parse(topic);
  if (!t || !known(t.product)) return "invalid topic format";
  if (t.appKey !== connectedAppKey) return "app_key mismatch";
  return { prefix: t.product, appKey: t.appKey, name: t.name };
}
