// Apps file settings beyond the basics: the per-app limits, webhook entries (filter, headers),
// and other Pusher servers' settings: Soketi's camelCase app keys read as ours, and the keys
// Switchboard has no equivalent for named in the start-up error (docs/pusher.md "Coming from
// Soketi or Reverb").
import {
  APP_LIMIT_NAMES,
  APP_LIMITS,
  type AppLimitName,
  type AppLimitSettings,
} from "../limits.ts";
import { type AppWebhook, WEBHOOK_EVENT_TYPES } from "./apps.ts";
import { ConfigError } from "./config.ts";

/** Why a key of another Pusher server has no place in our apps file, by key: the start-up error
 * names the key and says this. */
const FOREIGN: Record<string, string> = {
  lambda: "Soketi's AWS Lambda webhooks; Switchboard sends webhooks over HTTP only",
  lambda_function: "Soketi's AWS Lambda webhooks; Switchboard sends webhooks over HTTP only",
  batch_size:
    "a webhook setting of other servers; Switchboard batches per app with webhook_batching",
  maxReadRequestsPerSecond:
    "Soketi's read-request rate limit, which Switchboard does not have (-1, no limit, is accepted)",
  app_id: 'Reverb\'s name for the app id: call it "id"',
  options: "Reverb's client connection options: they belong to the client, not to the server",
  ping_interval: "Reverb's ping interval: Switchboard pings after --idle-timeout of silence",
  activity_timeout: "Reverb's activity timeout: Switchboard's is --idle-timeout, for every app",
  max_message_size:
    "Reverb's message size limit: use max_event_payload_bytes (event data), frames are capped at 1 MiB",
  accept_client_events_from: "Reverb's client event setting: use enable_client_messages",
};

/** The start-up error for an unknown key `k` at `at`; for another server's key, why. */
export function unknownKey(at: string, k: string): ConfigError {
  const why = FOREIGN[k];
  const hint = why
    ? ` (a setting of other Pusher servers that Switchboard does not support: ${why}; remove it)`
    : "";
  return new ConfigError(`${at} has unknown setting "${k}"${hint}`);
}

/** Soketi's camelCase app keys, each read as ours (`convert` turns its value into ours). */
const SOKETI: Record<string, { key: string; convert?: (v: unknown) => unknown }> = {
  enableClientMessages: { key: "enable_client_messages" },
  enableUserAuthentication: {
    key: "enable_user_authentication",
    convert: (v) => (v === true ? 1 : v === false ? 0 : v),
  },
  maxConnections: { key: "max_connections", convert: unlimited },
  maxBackendEventsPerSecond: { key: "max_backend_events_per_sec", convert: unlimited },
  maxClientEventsPerSecond: { key: "max_client_events_per_sec", convert: unlimited },
  maxPresenceMembersPerChannel: { key: "max_presence_members_per_channel" },
  maxPresenceMemberSizeInKb: { key: "max_presence_member_bytes", convert: kib },
  maxChannelNameLength: { key: "max_channel_name_length" },
  maxEventChannelsAtOnce: { key: "max_event_channels" },
  maxEventNameLength: { key: "max_event_name_length" },
  maxEventPayloadInKb: { key: "max_event_payload_bytes", convert: kib },
  maxEventBatchSize: { key: "max_event_batch_size" },
};

/** Soketi's -1 ("no limit") is our 0. */
function unlimited(v: unknown): unknown {
  return v === -1 ? 0 : v;
}

/** Soketi's sizes in KiB (fractions allowed) as bytes. */
function kib(v: unknown): unknown {
  return typeof v === "number" ? Math.round(v * 1024) : v;
}

/**
 * The app entry `r` with Soketi's camelCase keys read as ours (a copy; `r` is untouched).
 * Refuses an entry giving a setting both ways. `maxReadRequestsPerSecond` of -1 (no limit,
 * as Switchboard) is accepted and dropped; any other value is refused by the caller.
 */
export function soketiAliases(r: Record<string, unknown>, at: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) {
    if (k === "maxReadRequestsPerSecond" && (v === -1 || v === 0)) continue;
    const alias = SOKETI[k];
    if (!alias) {
      if (k in out) throw both(at, k);
      out[k] = v;
      continue;
    }
    if (alias.key in out || alias.key in r) throw both(at, alias.key, k);
    out[alias.key] = alias.convert ? alias.convert(v) : v;
  }
  return out;
}

function both(at: string, ours: string, theirs?: string): ConfigError {
  return new ConfigError(`${at} gives "${ours}" twice${theirs ? ` (as "${theirs}")` : ""}`);
}

/** The per-app limit keys of an app entry. */
export const LIMIT_KEYS: readonly string[] = APP_LIMIT_NAMES;

/** The per-app limits an app entry sets, validated: whole numbers from 1. */
export function parseLimits(r: Record<string, unknown>, at: string): AppLimitSettings | undefined {
  let out: AppLimitSettings | undefined;
  for (const name of APP_LIMIT_NAMES) {
    const v = r[name];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
      throw new ConfigError(
        `${at}: ${name} must be a whole number from 1 (default ${APP_LIMITS[name].default})`,
      );
    }
    (out ??= {})[name as AppLimitName] = v;
  }
  return out;
}

/** The keys of one webhook entry. */
const WEBHOOK_KEYS = new Set(["url", "event_types", "filter", "headers"]);
/** The keys of a webhook's `filter`. */
const FILTER_KEYS = new Set(["channel_name_starts_with", "channel_name_ends_with"]);
/** Headers a webhook's `headers` may not set: the signature, the body's type, and what the HTTP
 * client itself writes. */
const RESERVED_HEADERS = new Set([
  "x-pusher-key",
  "x-pusher-signature",
  "content-type",
  "content-length",
  "host",
  "connection",
  "transfer-encoding",
]);
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value: visible ASCII and Latin-1 text, spaces and tabs inside; no CR, LF or NUL. */
const HEADER_VALUE_RE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Validates `webhooks`: `[{ url, event_types, filter?, headers? }]` (docs/pusher.md
 * "Webhooks").
 */
export function parseWebhooks(v: unknown, at: string): AppWebhook[] {
  const types: readonly string[] = WEBHOOK_EVENT_TYPES;
  if (!Array.isArray(v)) {
    throw new ConfigError(`${at}: webhooks must be an array of { url, event_types }`);
  }
  return v.map((w, i) => {
    const here = `${at}: webhooks[${i}]`;
    const url = (w as { url?: unknown })?.url;
    const events = (w as { event_types?: unknown })?.event_types;
    if (w && typeof w === "object" && !Array.isArray(w)) {
      for (const k of Object.keys(w)) {
        if (!WEBHOOK_KEYS.has(k)) throw unknownKey(here, k);
      }
    }
    if (typeof url !== "string" || !/^https?:\/\/[^\s]+$/.test(url)) {
      throw new ConfigError(`${here}.url must be an http:// or https:// URL`);
    }
    if (!Array.isArray(events) || events.length === 0 || !events.every((e) => types.includes(e))) {
      throw new ConfigError(
        `${here}.event_types must be a non-empty array of ${types.join(", ")}`,
      );
    }
    const hook: AppWebhook = { url, event_types: events };
    const { filter, headers } = w as { filter?: unknown; headers?: unknown };
    if (filter !== undefined) hook.filter = parseFilter(filter, here);
    if (headers !== undefined) hook.headers = parseHeaders(headers, here);
    return hook;
  });
}

function parseFilter(v: unknown, at: string): NonNullable<AppWebhook["filter"]> {
  if (!v || typeof v !== "object" || Array.isArray(v)) {
    throw new ConfigError(
      `${at}.filter must be an object { channel_name_starts_with?, channel_name_ends_with? }`,
    );
  }
  const out: NonNullable<AppWebhook["filter"]> = {};
  for (const [k, s] of Object.entries(v)) {
    if (!FILTER_KEYS.has(k)) throw unknownKey(`${at}.filter`, k);
    if (typeof s !== "string" || s === "") {
      throw new ConfigError(`${at}.filter.${k} must be a non-empty string`);
    }
    out[k as keyof typeof out] = s;
  }
  return out;
}

function parseHeaders(v: unknown, at: string): Record<string, string> {
  if (!v || typeof v !== "object" || Array.isArray(v)) {
    throw new ConfigError(`${at}.headers must be an object { "Header-Name": "value" }`);
  }
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(v)) {
    if (!HEADER_NAME_RE.test(name)) {
      throw new ConfigError(`${at}.headers: ${JSON.stringify(name)} is not a header name`);
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      throw new ConfigError(
        `${at}.headers: "${name}" cannot be set: Switchboard writes it (X-Pusher-Key, X-Pusher-Signature, Content-Type, Content-Length, Host, Connection and Transfer-Encoding are its own)`,
      );
    }
    if (seen.has(lower)) throw new ConfigError(`${at}.headers: "${name}" is given twice`);
    seen.add(lower);
    if (typeof value !== "string" || !HEADER_VALUE_RE.test(value)) {
      throw new ConfigError(
        `${at}.headers["${name}"] must be a string of header text (no line breaks)`,
      );
    }
    out[name] = value;
  }
  return out;
}
