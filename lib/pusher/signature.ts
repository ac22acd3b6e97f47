/**
 * Pusher's signatures, all HMAC-SHA256 in lowercase hex with the app secret, all compared in
 * constant time:
 * - channel authorization: `key:hmac("socket_id:channel[:channel_data]")`;
 * - user authentication (`pusher:signin`): `key:hmac("socket_id::user::user_data")`;
 * - REST requests: `hmac("METHOD\npath\nsorted query")` in `auth_signature`, with `body_md5`;
 * - webhooks: `X-Pusher-Signature` = `hmac(body)`.
 */
import { Buffer } from "node:buffer";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { App } from "../config/apps.ts";

/** HMAC-SHA256 of `data` with `secret`, lowercase hex. */
export function hmacHex(secret: string, data: string): string {
  return createHmac("sha256", secret).update(data, "utf8").digest("hex");
}

/** MD5 of `body` (a string as UTF-8, or raw bytes), lowercase hex: the REST API's `body_md5`. */
export function md5Hex(body: string | Uint8Array): string {
  return typeof body === "string"
    ? createHash("md5").update(body, "utf8").digest("hex")
    : createHash("md5").update(body).digest("hex");
}

/** Compares two strings in time that depends only on their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  if (x.length !== y.length) {
    timingSafeEqual(x, x); // spend the same work before refusing
    return false;
  }
  return timingSafeEqual(x, y);
}

/** Whether `auth` is `app.key:hmac(signed)`. */
function validAuth(app: App, auth: unknown, signed: string): boolean {
  if (typeof auth !== "string") return false;
  const colon = auth.indexOf(":");
  if (colon < 0) return false;
  // Both halves are always compared, so the time does not tell which one was wrong.
  const keyOk = safeEqual(auth.slice(0, colon), app.key);
  const signatureOk = safeEqual(auth.slice(colon + 1), hmacHex(app.secret, signed));
  return keyOk && signatureOk;
}

/** Checks a `pusher:subscribe` signature for a private or presence channel. */
export function validChannelAuth(
  app: App,
  socketId: string,
  channel: string,
  auth: unknown,
  channelData?: string,
): boolean {
  const signed = channelData === undefined
    ? `${socketId}:${channel}`
    : `${socketId}:${channel}:${channelData}`;
  return validAuth(app, auth, signed);
}

/** Checks a `pusher:signin` signature. */
export function validUserAuth(
  app: App,
  socketId: string,
  auth: unknown,
  userData: string,
): boolean {
  return validAuth(app, auth, `${socketId}::user::${userData}`);
}

/** How far `auth_timestamp` may be from the server's clock (Pusher's 600 s). */
export const MAX_CLOCK_SKEW_S = 600;

/**
 * Checks Pusher's signed query authentication of one REST request. `query` holds the decoded
 * parameters as received; `body` is the raw body (empty for GET). Returns null when the
 * request is authentic, else the plain-text reason for a 401.
 */
export function requestProblem(
  app: App,
  method: string,
  path: string,
  query: URLSearchParams,
  body: string | Uint8Array,
  nowS = Date.now() / 1000,
): string | null {
  const key = query.get("auth_key");
  if (key === null || !safeEqual(key, app.key)) return "Unknown auth_key";
  if (query.get("auth_version") !== null && query.get("auth_version") !== "1.0") {
    return "Unsupported auth_version: use 1.0";
  }
  const rawTs = query.get("auth_timestamp");
  if (!rawTs) return "Missing auth_timestamp";
  // Whole seconds in decimal digits only: Number() would also take "0x...", "1e9" or " 1".
  if (!/^\d{1,12}$/.test(rawTs)) {
    return "Invalid auth_timestamp: whole seconds since the epoch, in decimal digits";
  }
  const ts = Number(rawTs);
  if (Math.abs(nowS - ts) > MAX_CLOCK_SKEW_S) {
    return `Timestamp expired: Given timestamp (${
      query.get("auth_timestamp")
    }) not within ${MAX_CLOCK_SKEW_S}s of server time (${Math.floor(nowS)})`;
  }
  if (body.length > 0) {
    const md5 = query.get("body_md5");
    if (md5 === null || !safeEqual(md5.toLowerCase(), md5Hex(body))) {
      return "Invalid body_md5: it does not match the body";
    }
  }
  const signature = query.get("auth_signature");
  if (signature === null) return "Missing auth_signature";
  const pairs: [string, string][] = [];
  for (const [k, v] of query) if (k !== "auth_signature") pairs.push([k.toLowerCase(), v]);
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const signed = [method.toUpperCase(), path, pairs.map(([k, v]) => `${k}=${v}`).join("&")].join(
    "\n",
  );
  if (!safeEqual(signature.toLowerCase(), hmacHex(app.secret, signed))) {
    return `Invalid signature: Expected HMAC SHA256 hex digest of ${JSON.stringify(signed)}`;
  }
  return null;
}
