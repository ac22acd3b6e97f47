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
