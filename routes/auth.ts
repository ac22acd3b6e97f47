/** `POST /api/auth`: the capability issuer (JWT form). */
import { Hono } from "hono";
import type { AppRegistry } from "../lib/config/apps.ts";
import { appCredentials, type AppEnv } from "../lib/http/credentials.ts";
import { validateCapabilities } from "../lib/auth/capability.ts";
import { issueJwt } from "../lib/auth/jwt.ts";
import { ApiError, readJsonBody } from "../lib/http/errors.ts";
import { answerIn, NATIVE } from "../lib/http/surfaces.ts";
import { idProblem } from "../lib/limits.ts";

/**
 * The issuer sub-app. Credentials first (401), then 400 for a body that is not JSON, then 422
 * naming the bad field or capability, else 200 `{ auth: <jwt> }` (exp = now + 300 s).
 */
export function authRoutes(registry: AppRegistry): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  // Also mounted on its own (outside the server): answers its refusals itself.
  routes.onError(answerIn(NATIVE));
  routes.post("/api/auth", appCredentials(registry), async (c) => {
    const read = await readJsonBody(c);
    if (!read.ok) throw new ApiError(400, "request body is not valid JSON");
    const body = read.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new ApiError(422, "request body must be a JSON object", { source: { pointer: "" } });
    }
    const { socket_id, client_id, capabilities } = body as Record<string, unknown>;
    for (const [name, value] of [["socket_id", socket_id], ["client_id", client_id]] as const) {
      if (typeof value !== "string" || value === "") {
        const detail = value === undefined
          ? `${name} is required`
          : `${name} must be a non-empty string`;
        throw new ApiError(422, detail, { source: { pointer: `/${name}` } });
      }
    }
    // The client id becomes part of chat storage keys: bounded like every id (docs/limits.md).
    const longId = idProblem("client_id", client_id as string);
    if (longId) throw new ApiError(422, longId, { source: { pointer: "/client_id" } });
    if (capabilities === undefined) {
      throw new ApiError(422, "capabilities is required", { source: { pointer: "/capabilities" } });
    }
    const checked = validateCapabilities(capabilities);
    if (!checked.ok) {
      throw new ApiError(422, checked.detail, { source: { pointer: "/capabilities" } });
    }
    const auth = await issueJwt(c.get("app"), {
      socket_id: socket_id as string,
      client_id: client_id as string,
      capabilities: checked.capabilities,
    });
    return c.json({ auth });
  });
  return routes;
}
