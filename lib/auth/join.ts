/**
 * The one place a channel join's credentials are read and verified, for every product: a
 * capability token (`auth`), the App Secret (`app_secret`, Durable Object channels) or an agent
 * secret (`agent_secret` + `agent_id`, chat threads). Products then decide what the verified
 * credential may do; none parses these params itself.
 */
import type { App } from "../config/apps.ts";
import type { Principal } from "./principal.ts";
import { constantTimeEqual } from "./verify.ts";

/** A verified join credential. `none`: the join presented nothing. */
export type JoinCredential =
  | { kind: "none" }
  | { kind: "token"; principal: Principal }
  | { kind: "app_secret" }
  | { kind: "agent"; agentId: string };

/** Which secrets a product accepts besides tokens. */
export interface JoinCredentialOptions {
  /** `app_secret` (Durable Object channels). */
  appSecret?: boolean;
  /** `agent_secret` with `agent_id` (chat threads). */
  agentSecret?: boolean;
}

/** What verification needs of a join (the socket layer's JoinContext has it). */
export interface JoinRequest {
  app: App;
  params: Record<string, unknown>;
  verify(token: unknown): Promise<Principal | null>;
}

const given = (v: unknown) => v !== undefined && v !== null && v !== "";

/**
 * Verifies the join's credential. Refusals carry the spec's reasons: `invalid secret` (agent),
 * `invalid app_secret`, `invalid token`. Secrets are compared in constant time.
 */
export async function verifyJoin(
  req: JoinRequest,
  opts: JoinCredentialOptions = {},
): Promise<JoinCredential | { error: string }> {
  const p = req.params;
  if (opts.agentSecret && p.agent_secret !== undefined) {
    if (typeof p.agent_secret !== "string" || !constantTimeEqual(p.agent_secret, req.app.secret)) {
      return { error: "invalid secret" };
    }
    const agentId = typeof p.agent_id === "string" && p.agent_id !== "" ? p.agent_id : "agent";
    return { kind: "agent", agentId };
  }
  if (opts.appSecret && typeof p.app_secret === "string" && p.app_secret !== "") {
    return constantTimeEqual(req.app.secret, p.app_secret)
      ? { kind: "app_secret" }
      : { error: "invalid app_secret" };
  }
  if (given(p.auth)) {
    const principal = await req.verify(p.auth);
    return principal ? { kind: "token", principal } : { error: "invalid token" };
  }
  return { kind: "none" };
}
