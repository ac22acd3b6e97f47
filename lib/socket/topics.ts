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
  const first = topic.indexOf(":");
  const second = first < 0 ? -1 : topic.indexOf(":", first + 1);
  if (first < 0 || second < 0) return "invalid topic format";
  const prefix = topic.slice(0, first);
  const appKey = topic.slice(first + 1, second);
  const name = topic.slice(second + 1);
  if (!known(prefix) || appKey === "" || name === "") return "invalid topic format";
  if (appKey !== connectedAppKey) return "app_key mismatch";
  return { prefix, appKey, name };
}
