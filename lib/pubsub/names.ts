/**
 * Channel names, kinds and the validation limits shared by the socket channel, the HTTP
 * routes and client publishes (see docs/channels.md "Names and limits").
 */

/** The four channel kinds, chosen by name prefix. */
export type ChannelKind = "public" | "private" | "presence" | "ephemeral";

/** Longest channel name (Pusher's limit). */
export const MAX_CHANNEL_NAME = 164;
/** Longest event name. */
export const MAX_EVENT_NAME = 200;
/** Largest backend-published `data` of the native HTTP API, as JSON bytes, unless the app sets
 * `max_event_payload_bytes` (client events: that per-app limit, lib/pubsub/app_limits.ts). */
export const MAX_BACKEND_DATA_BYTES = 64 * 1024;
/** Most events in one `push` batch. */
export const MAX_PUSH_EVENTS = 100;

const NAME_RE = /^[A-Za-z0-9_\-=@,.;:]+$/;

/** The kind of `name` by its prefix. */
export function channelKind(name: string): ChannelKind {
  if (name.startsWith("private-")) return "private";
  if (name.startsWith("presence-")) return "presence";
  if (name.startsWith("ephemeral-")) return "ephemeral";
  return "public";
}

/** Pusher's cache channels: their last event is handed to each new subscriber. */
const CACHE_PREFIXES = ["cache-", "private-cache-", "private-encrypted-cache-", "presence-cache-"];

/** How long a cache channel's last event stays the cached one (Pusher's 30 minutes). */
export const CACHE_TTL_MS = 30 * 60 * 1000;

/** Whether `name` is a cache channel (`cache-`, `private-cache-`, `private-encrypted-cache-`,
 * `presence-cache-`); its kind, and so its auth rules, is still that of its base prefix. */
export function isCacheChannel(name: string): boolean {
  return CACHE_PREFIXES.some((p) => name.startsWith(p));
}

/** Whether `name` is a valid channel name: 1..164 chars of `[A-Za-z0-9_\-=@,.;:]`. */
export function validChannelName(name: unknown): name is string {
  return typeof name === "string" && name.length > 0 && name.length <= MAX_CHANNEL_NAME &&
    NAME_RE.test(name);
}

/** Whether `name` is 1 or more characters of `[A-Za-z0-9_\-=@,.;:]` (any length: the caller
 * holds it to the app's `max_channel_name_length`). */
export function channelNameChars(name: unknown): name is string {
  return typeof name === "string" && name.length > 0 && NAME_RE.test(name);
}

/**
 * Why `event` is not a publishable event name, or null when it is. Reserved: `phx_*` (Phoenix
 * control events) and `presence:*` (server presence events).
 */
export function eventNameProblem(event: unknown): string | null {
  if (typeof event !== "string" || event === "") return "event must be a non-empty string";
  if (event.length > MAX_EVENT_NAME) return `event name longer than ${MAX_EVENT_NAME} characters`;
  if (event.startsWith("phx_") || event.startsWith("presence:")) {
    return `event name ${JSON.stringify(event)} is reserved`;
  }
  return null;
}

export { jsonBytes } from "../limits.ts";
