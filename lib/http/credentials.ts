/** Server-to-server credentials: the `X-App-Key` / `X-App-Secret` header pair. */
import type { MiddlewareHandler } from "hono";
import type { App, AppRegistry } from "../config/apps.ts";
import { ApiError } from "./errors.ts";
import { NATIVE, type Surface } from "./surfaces.ts";
import { constantTimeEqual } from "../auth/fast_token.ts";

/** Hono environment of routes behind `appCredentials`: `c.get("app")` is the caller's app. */
export type AppEnv = { Variables: { app: App } };

/** Compared against when the key is unknown, so both failure paths do similar work. */
const DUMMY_SECRET = "x".repeat(32);

/**
 * Finds the app whose key and secret match the headers (secret compared in constant time);
 * undefined when either header is missing or wrong.
 */
export function appFromCredentials(
  registry: AppRegistry,
  key: string | undefined,
  secret: string | undefined,
): App | undefined {
  if (!key || secret === undefined) return undefined;
  const app = registry.byKey(key);
  const ok = constantTimeEqual(app?.secret ?? DUMMY_SECRET, secret);
  return app && ok ? app : undefined;
}

/**
 * Middleware: authenticates `X-App-Key` + `X-App-Secret` and sets `c.get("app")`. When mounted
 * on a path with an `:app_id` parameter (`app.use("/api/apps/:app_id/*", mw)`, or inline on a
 * route `app.post("/api/apps/:app_id/trigger", mw, handler)`), that segment (App Key or App ID)
 * must name the same app. Mounted globally (`app.use("*", mw)`) it cannot see a route's
 * `:app_id`, so mount it on the `:app_id` pattern instead. Any failure answers 401
 * (`Unauthorized`, no detail, as the spec prescribes) and a disabled app 403 (`app disabled`),
 * both in `surface`'s shape (NATIVE by default; the chat REST passes CHAT).
 */
export function appCredentials(
  registry: AppRegistry,
  surface: Surface = NATIVE,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const app = appFromCredentials(
      registry,
      c.req.header("X-App-Key"),
      c.req.header("X-App-Secret"),
    );
    const pathAppId = c.req.param("app_id");
    if (!app || (pathAppId !== undefined && registry.byIdOrKey(pathAppId) !== app)) {
      return surface.answer(new ApiError(401));
    }
    if (app.enabled === false) return surface.answer(new ApiError(403, "app disabled"));
    c.set("app", app);
    await next();
  };
}
