/**
 * Topic checks of the socket layer: a joined topic must parse (`Topic.parse`: the one parse of
 * a frame's topic, whose value then travels with the join), name a registered handler and the
 * connected app.
 */
import { Topic } from "../wire/topic.ts";

/**
 * Parses `{prefix}:{appKey}:{rest}` (docs/protocol.md "Topics"). The socket layer knows no product:
 * `known` is the set of prefixes channel handlers registered. Returns the spec's join error
 * reason when the shape is wrong, no handler owns the prefix, or the app key is not the
 * connected app's. Product-specific name rules (a Durable Object's `type:key`) belong to the
 * handler.
 */
export function parseTopic(
  topic: string,
  connectedAppKey: string,
  known: (prefix: string) => boolean,
): Topic | string {
  const t = Topic.parse(topic);
  if (!t || !known(t.product)) return "invalid topic format";
  if (t.appKey !== connectedAppKey) return "app_key mismatch";
  return t;
}
