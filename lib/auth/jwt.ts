/**
 * JWT-form capability tokens (HS256, signed with the App Secret, audience `service:v3`), as
 * minted by `POST /api/auth`.
 */
import { jwtVerify, SignJWT } from "jose";
import type { App } from "../config/apps.ts";

/** The audience every JWT-form token carries. */
export const JWT_AUDIENCE = "service:v3";

/** Default JWT lifetime in seconds. */
export const JWT_DEFAULT_TTL_SECONDS = 300;

/** The claims of a JWT-form capability token. */
export interface JwtClaims {
  aud: string;
  socket_id: string;
  client_id: string;
  capabilities: string[];
  app_id: string;
  app_key: string;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
}

const ENCODER = new TextEncoder();

/** Signs a JWT for `app` binding the grant to one socket; exp = now + `ttlSeconds` (300). */
export async function issueJwt(
  app: App,
  grant: { socket_id: string; client_id: string; capabilities: string[] },
  ttlSeconds = JWT_DEFAULT_TTL_SECONDS,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return await new SignJWT({
    socket_id: grant.socket_id,
    client_id: grant.client_id,
    capabilities: grant.capabilities,
    app_id: app.id,
    app_key: app.key,
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(ENCODER.encode(app.secret));
}

/**
 * Verifies signature (HS256 only), audience, exp and nbf of a JWT for `app`; returns the raw
 * claims or null. Claim shapes and socket binding are checked by `verifyToken`.
 */
export async function verifyJwt(app: App, token: string): Promise<Record<string, unknown> | null> {
  try {
    const { payload } = await jwtVerify(token, ENCODER.encode(app.secret), {
      algorithms: ["HS256"],
      audience: JWT_AUDIENCE,
      requiredClaims: ["exp"],
    });
    return payload as Record<string, unknown>;
  } catch {
    return null;
  }
}
