/** Token verification at join time: either token form -> Principal, or null. */
import type { App } from "../config/apps.ts";
import { base64urlDecodeText } from "./base64url.ts";
import { makePrincipal, validateCapabilities } from "./capability.ts";
import { verifyFastToken } from "./fast_token.ts";
import { verifyJwt } from "./jwt.ts";
import type { Principal } from "./principal.ts";

export { constantTimeEqual } from "./fast_token.ts";

/** Tokens longer than this are refused without further work. */
const MAX_TOKEN_LENGTH = 16_384;

function looksLikeJwt(token: string): boolean {
  const parts = token.split(".");
  if (parts.length !== 3) return false;
  const header = base64urlDecodeText(parts[0]);
  if (header === null) return false;
  try {
    const parsed = JSON.parse(header);
    return typeof parsed === "object" && parsed !== null && typeof parsed.alg === "string";
  } catch {
    return false;
  }
}

async function fromJwt(app: App, token: string, socketId: string): Promise<Principal | null> {
  const claims = await verifyJwt(app, token);
  if (!claims) return null;
  if (claims.app_key !== app.key || claims.socket_id !== socketId) return null;
  if (claims.app_id !== undefined && claims.app_id !== app.id) return null;
  if (claims.client_id !== undefined && typeof claims.client_id !== "string") return null;
  const checked = validateCapabilities(claims.capabilities);
  if (!checked.ok) return null;
  return makePrincipal({
    socketId,
    clientId: claims.client_id as string | undefined,
    kind: "token",
    capabilities: checked.capabilities,
  });
}

/**
 * Verifies a capability token of either form for `app` on the socket `socketId`. Returns null
 * for anything bad: not a string, malformed, expired, not yet valid, wrong signature, wrong
 * audience, an algorithm other than HS256 (including `none`), another app's token, or a token
 * bound to a different socket.
 */
export async function verifyToken(
  app: App,
  token: unknown,
  socketId: string,
): Promise<Principal | null> {
  if (typeof token !== "string" || token === "" || token.length > MAX_TOKEN_LENGTH) return null;
  if (token.startsWith(`${app.key}.`)) {
    const payload = await verifyFastToken(app, token);
    if (!payload || payload.socket_id !== socketId) return null;
    return makePrincipal({
      socketId,
      clientId: payload.client_id,
      kind: "token",
      capabilities: payload.capabilities,
    });
  }
  if (looksLikeJwt(token)) return await fromJwt(app, token, socketId);
  return null;
}
