/**
 * The capability grammar for the server: the grammar itself lives in sdk/shared/capability.ts
 * (shared with the server SDK); this module adds Principals built on its matcher.
 */
import { capabilityMatcher } from "../../sdk/shared/capability.ts";
import type { Principal } from "./principal.ts";

export {
  type Capability,
  capabilityMatches,
  CHAT_AGENT_VERBS,
  CHAT_CLIENT_VERBS,
  objectTypeProblem,
  parseCapability,
  validateCapabilities,
} from "../../sdk/shared/capability.ts";

/** Fields of a Principal; `can` is derived from `capabilities`. */
export interface PrincipalFields {
  socketId: string;
  clientId?: string;
  kind: Principal["kind"];
  capabilities: string[];
  /** The capabilities are a built-in grant set naming exact resources (`*` is literal). */
  literal?: boolean;
}

/** Builds a Principal whose `can()` matches needs against its capabilities. */
export function makePrincipal(fields: PrincipalFields): Principal {
  const capabilities = [...fields.capabilities];
  const can = capabilityMatcher(capabilities, fields.literal);
  const principal: Principal = { socketId: fields.socketId, kind: fields.kind, capabilities, can };
  if (fields.clientId !== undefined) principal.clientId = fields.clientId;
  return principal;
}
