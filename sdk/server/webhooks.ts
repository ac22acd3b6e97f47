/**
 * Checking webhook signatures in an application's backend: the channel webhooks (signed like
 * Pusher's: `X-Pusher-Key` and `X-Pusher-Signature` = hex HMAC-SHA256 of the raw body keyed by
 * the app secret) here, and the chat bots' `verifyWebhook` re-exported from the shared module
 * the server signs with. WebCrypto only, so it runs in Node 20+, Deno, Bun and workers.
 */
export { verifyWebhook } from "../shared/webhook_signature.ts";

const encoder = new TextEncoder();

/** Lowercase hex of HMAC-SHA256(secret, text). */
async function hmacHex(secret: string, text: string): Promise<string> {
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

/**
 * True when a channel webhook request is genuine: `key` (the `X-Pusher-Key` header) is the app
 * key and `signature` (`X-Pusher-Signature`) is the hex HMAC-SHA256 of `rawBody` with the app
 * secret. Compares in time that depends only on the lengths. Verify the raw text before
 * `JSON.parse`.
 */
export async function verifyChannelWebhook(
  app: { key: string; secret: string },
  headers: { key: string | null | undefined; signature: string | null | undefined },
  rawBody: string,
): Promise<boolean> {
  if (!headers.key || !headers.signature || headers.key !== app.key) return false;
  const expected = await hmacHex(app.secret, rawBody);
  const given = headers.signature.toLowerCase();
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ given.charCodeAt(i);
  return diff === 0;
}
