/**
 * Limits shared by every product, and how sizes are counted (UTF-8 bytes, JSON text). Every
 * limit of the service is listed in docs/limits.md.
 */
import { Buffer } from "node:buffer";

/** UTF-8 byte length of a string (a lone surrogate counts 3, as its encoding U+FFFD does);
 * counted without encoding it (TextEncoder allocates the bytes: 1.5 µs a call under Deno). */
export function byteLength(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/** 10^i for i in 0..21, each exact as a double. */
const POW10 = Array.from({ length: 22 }, (_, i) => 10 ** i);

/** Bytes a value takes as JSON text (0 for undefined). */
export function jsonBytes(value: unknown): number {
  if (typeof value === "number" && Number.isFinite(value)) {
    // An integer below 1e21 is its digits (and sign) in JSON: counted against exact powers of
    // ten, with no string built (an increment's result; `String(n)` was a twentieth of a hot
    // write's JavaScript time). Other finite numbers: their ASCII String() form.
    const a = Math.abs(value);
    if (!Number.isInteger(value) || a >= 1e21) return String(value).length;
    let digits = 1;
    while (a >= POW10[digits]) digits++;
    return value < 0 ? digits + 1 : digits;
  }
  const text = JSON.stringify(value);
  return text === undefined ? 0 : byteLength(text);
}

/**
 * Longest id or name that becomes part of a storage key, in UTF-8 bytes: app ids and keys,
 * object types, keys and slot names, chat thread, message, run, participant, reaction, bot,
 * client and agent ids. LMDB keys hold at most 1,978 bytes and ours join several parts (at most
 * five, e.g. `[kind, app, thread, message, reaction]`), so each part is bounded well below that,
 * before any write starts. The one bound for every such part: other modules import it.
 */
export const MAX_ID_BYTES = 256;

/** Why `value` is not a usable id for `field`, or null (`field` names it in the refusal). */
export function idProblem(field: string, value: string): string | null {
  return byteLength(value) > MAX_ID_BYTES ? `${field} is longer than ${MAX_ID_BYTES} bytes` : null;
}

/** Largest chat message content, as JSON (REST create/edit, live send/edit/message/run end). */
export const MAX_MESSAGE_CONTENT_BYTES = 256 * 1024;

/** Most runs of one thread waiting to start (`pending`); a send beyond is refused. */
export const MAX_PENDING_RUNS = 64;

/** Largest presence `user_info` and Spaces member `data`, as JSON. */
export const MAX_MEMBER_INFO_BYTES = 2 * 1024;

/** Largest HTTP request body, read with this cap (413 beyond, before it is all read). */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * The per-app limits of the apps file (docs/limits.md "Per-app limits"), each optional: the
 * default is Pusher's published limit. A value above `ceiling` is accepted (other servers'
 * defaults are larger, e.g. Soketi's 200-character channel names) and the ceiling applies:
 * channel names and event names are bounded by the names' grammar everywhere else too.
 */
export const APP_LIMITS = {
  /** Distinct users of one presence channel. */
  max_presence_members_per_channel: { default: 100, ceiling: 100_000 },
  /** A presence member's `user_info`, as JSON bytes. */
  max_presence_member_bytes: { default: 2048, ceiling: 64 * 1024 },
  /** Characters of a channel name. */
  max_channel_name_length: { default: 164, ceiling: 164 },
  /** Characters of an event name. */
  max_event_name_length: { default: 200, ceiling: 200 },
  /** An event's data: Pusher REST `data` (UTF-8 bytes of the string), client events (JSON). */
  max_event_payload_bytes: { default: 10 * 1024, ceiling: 1024 * 1024 },
  /** Channels of one Pusher REST `events` call. */
  max_event_channels: { default: 100, ceiling: 10_000 },
  /** Events of one Pusher REST `batch_events` call. */
  max_event_batch_size: { default: 10, ceiling: 1000 },
} as const;

/** The name of one per-app limit (its apps file key). */
export type AppLimitName = keyof typeof APP_LIMITS;

/** Every per-app limit name, in the order of the docs. */
export const APP_LIMIT_NAMES = Object.keys(APP_LIMITS) as AppLimitName[];

/** The values an app set explicitly in the apps file (absent: the default applies). */
export type AppLimitSettings = Partial<Record<AppLimitName, number>>;

/** The limit `name` in force for `app`: its apps file value (the default when unset), at most
 * the ceiling. */
export function appLimit(app: { limits?: AppLimitSettings }, name: AppLimitName): number {
  const spec = APP_LIMITS[name];
  return Math.min(app.limits?.[name] ?? spec.default, spec.ceiling);
}
