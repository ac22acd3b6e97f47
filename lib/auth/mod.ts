/** Public face of the auth module: capabilities, both token forms, verification (the credentials middleware is lib/http/credentials.ts). */
export {
  capabilityMatches,
  CHAT_AGENT_VERBS,
  CHAT_CLIENT_VERBS,
  makePrincipal,
  parseCapability,
  validateCapabilities,
} from "./capability.ts";
export type { Capability, PrincipalFields } from "./capability.ts";
export { mintFastToken, verifyFastToken } from "./fast_token.ts";
export type { FastTokenPayload } from "./fast_token.ts";
export { issueJwt, JWT_AUDIENCE, JWT_DEFAULT_TTL_SECONDS, verifyJwt } from "./jwt.ts";
export type { JwtClaims } from "./jwt.ts";
export { constantTimeEqual, verifyToken } from "./verify.ts";
export { type JoinCredential, verifyJoin } from "./join.ts";
export type { Principal } from "./principal.ts";
