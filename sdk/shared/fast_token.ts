/**
 * Fast-path capability tokens: `{appKey}.{payloadB64}.{sigB64}` where the payload is
 * `{ socket_id, capabilities, client_id? }` and the signature is base64url(HMAC-SHA256(appSecret,
 * `{appKey}.{payloadB64}`)). No expiry, no jti: a pure function of secret, socket and grants.
 */
import { base64urlDecodeText, base64urlEncode } from "./base64url.ts";
import { validateCapabilities } from "./capability.ts";

/** The decoded payload of a fast-path token. */
export interface FastTokenPayload {
  socket_id: string;
  capabilities: string[];
  client_id?: string;
}

const ENCODER = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey(
      "raw",
      ENCODER.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    // Bounded by the number of configured apps; cleared if it ever grows unexpectedly.
    if (keys.size > 1024) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

async function sign(secret: string, text: string): Promise<string> {
  const sig = await crypto.subtle.sign("HMAC", await hmacKey(secret), ENCODER.encode(text));
  return base64urlEncode(new Uint8Array(sig));
}

/** Compares two strings in time that depends only on their lengths, not their contents. */
export function constantTimeEqual(a: string, b: string): boolean {
  // Code units compared in place: string equality, without encoding both on every request.
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < n; i++) {
    diff |= (i < a.length ? a.charCodeAt(i) : 0) ^ (i < b.length ? b.charCodeAt(i) : 0);
  }
  return diff === 0;
}

/**
 * Mints a fast-path token for `socketId`. Throws when `capabilities` is not a non-empty,
 * duplicate-free list of well-formed capabilities, or `socketId` is empty.
 */
export async function mintFastToken(
  app: { key: string; secret: string },
  socketId: string,
  capabilities: string[],
  clientId?: string,
): Promise<string> {
  if (typeof socketId !== "string" || socketId === "") {
    throw new TypeError(`socketId must be a non-empty string, got ${JSON.stringify(socketId)}.`);
  }
  const checked = validateCapabilities(capabilities);
  if (!checked.ok) throw new TypeError(`Cannot mint a token: ${checked.detail}.`);
  const payload: FastTokenPayload = { socket_id: socketId, capabilities: checked.capabilities };
  if (clientId !== undefined) payload.client_id = clientId;
  const payloadB64 = base64urlEncode(JSON.stringify(payload));
  return `${app.key}.${payloadB64}.${await sign(app.secret, `${app.key}.${payloadB64}`)}`;
}

/**
 * Verifies a fast-path token for `app`; returns its payload, or null when the token is
 * malformed, signed with another secret, for another app, or carries an invalid payload.
 * Socket binding is checked by the caller (see `verifyToken`).
 */
export async function verifyFastToken(
  app: { key: string; secret: string },
  token: string,
): Promise<FastTokenPayload | null> {
  // Split after the known key, so the rule holds even for a key that contains a dot.
  if (!token.startsWith(`${app.key}.`)) return null;
  const parts = token.slice(app.key.length + 1).split(".");
  if (parts.length !== 2) return null;
  const [payloadB64, sigB64] = parts;
  const expected = await sign(app.secret, `${app.key}.${payloadB64}`);
  if (!constantTimeEqual(expected, sigB64)) return null;
  const text = base64urlDecodeText(payloadB64);
  if (text === null) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  const { socket_id, capabilities, client_id } = payload as Record<string, unknown>;
  if (typeof socket_id !== "string" || socket_id === "") return null;
  if (client_id !== undefined && typeof client_id !== "string") return null;
  const checked = validateCapabilities(capabilities);
  if (!checked.ok) return null;
  const out: FastTokenPayload = { socket_id, capabilities: checked.capabilities };
  if (client_id !== undefined) out.client_id = client_id;
  return out;
}
