/**
 * The one way to make a string key out of several parts (an app id and a channel name, a topic
 * and a user id, an app id, thread id and run id...): storage stream ids and every in-memory
 * map or set keyed by more than one id. Two different tuples never give the same key.
 *
 * The parts are joined with `/`; every part but the last has `%` written `%25` and `/` written
 * `%2F`, so it holds no `/` and the first `arity - 1` slashes split the key back into its parts;
 * the last part is the rest, unescaped. Each keyspace (one log's streams, one map) therefore
 * holds keys of ONE arity: `keyOf("a", "b/c")` and `keyOf("a", "b", "c")` are the same string.
 *
 * The last part is left as it is, and app ids (`A-Z a-z 0-9 _ -`, lib/config/app_ids.ts) never
 * change when escaped, so the stream ids written before this function existed are its output
 * unchanged (`{appId}/{channel}`, `{appId}/{threadId}`, `{appId}/{type}/{key}` with `%` and `/`
 * of the type escaped): no stored data moves. It sits in the wire layer so that every layer
 * above (hub, cluster, streams, products) uses the same function.
 */

/** The separator between parts. */
export const KEY_SEPARATOR = "/";

/** `part` with `%` and `/` escaped (unchanged, without copying, when it holds neither). */
export function escapeKeyPart(part: string): string {
  return part.includes("%") || part.includes("/")
    ? part.replaceAll("%", "%25").replaceAll("/", "%2F")
    : part;
}

/** The part `escapeKeyPart` was given. */
export function unescapeKeyPart(escaped: string): string {
  return escaped.includes("%") ? escaped.replaceAll("%2F", "/").replaceAll("%25", "%") : escaped;
}

/**
 * The key of `parts` (at least one): every part but the last escaped, joined with `/`. Within
 * one keyspace every key must have the same number of parts (see the module comment).
 */
export function keyOf(...parts: string[]): string {
  const last = parts.length - 1;
  let key = "";
  for (let i = 0; i < last; i++) key += escapeKeyPart(parts[i]) + KEY_SEPARATOR;
  return key + parts[last];
}

/**
 * The common start of every key `keyOf(...leading, x, ...)` whose part `x` starts with
 * `partial` (escaping works character by character, so prefixes stay prefixes): for listings
 * in key order.
 */
export function keyPrefix(leading: readonly string[], partial = ""): string {
  let key = "";
  for (const part of leading) key += escapeKeyPart(part) + KEY_SEPARATOR;
  return key + escapeKeyPart(partial);
}

/** The `arity` parts of a key made by `keyOf` with that many parts, or null when it has fewer
 * separators. */
export function splitKey(key: string, arity: number): string[] | null {
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < arity - 1; i++) {
    const slash = key.indexOf(KEY_SEPARATOR, from);
    if (slash < 0) return null;
    parts.push(unescapeKeyPart(key.slice(from, slash)));
    from = slash + 1;
  }
  parts.push(key.slice(from));
  return parts;
}
