/**
 * Webhook signatures: `X-Switchboard-Signature: sha256=<hex>` where hex is the HMAC-SHA256,
 * keyed by the bot's webhook secret, of `${timestamp}.${rawBody}` and `timestamp` is the
 * `X-Switchboard-Timestamp` header (unix seconds). Shared by the dispatcher and the server SDK.
 */

const encoder = new TextEncoder();

/** Lowercase hex of HMAC-SHA256(secret, text), by WebCrypto (browsers, Node 20+, Deno, Bun). */
export async function hmacSha256Hex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether two strings are equal, in time that depends only on their lengths. */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** `sha256=<hex HMAC-SHA256(secret, `${timestamp}.${body}`)>`. */
export async function signWebhook(
  secret: string,
  timestamp: string,
  body: string,
): Promise<string> {
  return `sha256=${await hmacSha256Hex(secret, `${timestamp}.${body}`)}`;
}

/**
 * True when `signature` matches `body` at `timestamp` and the timestamp is within
 * `toleranceSeconds` (default 300) of now. Compares in constant time.
 */
export async function verifyWebhook(
  secret: string,
  signature: string | null | undefined,
  timestamp: string | null | undefined,
  body: string,
  toleranceSeconds = 300,
): Promise<boolean> {
  if (!signature || !timestamp || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  return sameText(await signWebhook(secret, timestamp, body), signature);
}
