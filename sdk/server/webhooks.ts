/**
 * Checking webhook signatures in an application's backend: the channel webhooks (signed like
 * Pusher's: `X-Pusher-Key` and `X-Pusher-Signature` = hex HMAC-SHA256 of the raw body keyed by
 * the app secret) here, and the chat bots' `verifyWebhook` re-exported from the shared module
 * the server signs with. WebCrypto only, so it runs in Node 20+, Deno, Bun and workers.
 */
import { hmacSha256Hex, sameText } from "../shared/webhook_signature.ts";

export { verifyWebhook } from "../shared/webhook_signature.ts";

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
  return sameText(await hmacSha256Hex(app.secret, rawBody), headers.signature.toLowerCase());
}
