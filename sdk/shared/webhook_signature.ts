/**
 * Webhook signatures: `X-Switchboard-Signature: sha256=<hex>` where hex is the HMAC-SHA256,
 * keyed by the bot's webhook secret, of `${timestamp}.${rawBody}` and `timestamp` is the
 * `X-Switchboard-Timestamp` header (unix seconds). Shared by the dispatcher and the server SDK.
 */

const encoder = new TextEncoder();

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `sha256=<hex HMAC-SHA256(secret, `${timestamp}.${body}`)>`. */
export async function signWebhook(
  secret: string,
  timestamp: string,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestamp}.${body}`));
  return `sha256=${hex(mac)}`;
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
  const expected = await signWebhook(secret, timestamp, body);
  if (expected.length !== signature.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) {
    diff |= expected.charCodeAt(i) ^ signature.charCodeAt(i);
  }
  return diff === 0;
}
