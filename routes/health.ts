// The health routes: `/healthz` (liveness) and `/readyz` (readiness: storage takes a durable
// write).
import { Hono } from "hono";
import type { StoreEnv } from "../lib/store/env.ts";

/**
 * `GET /healthz`: liveness, 200 `{ status: "ok" }` once HTTP and WebSocket traffic are
 * accepted. `GET /readyz`: readiness, 200 `{ status: "ready" }` when storage takes a durable
 * write, else 503 `{ status: "unavailable", reason }` (disk full, shutting down).
 */
export function healthRoutes(env: StoreEnv): Hono {
  const app = new Hono();
  const probe = env.db<number>("system");
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    try {
      const unavailable = env.unavailable();
      if (unavailable) return c.json({ status: "unavailable", reason: unavailable }, 503);
      await env.transaction(() => probe.put("ready_probe", Date.now()));
      return c.json({ status: "ready" });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      return c.json({ status: "unavailable", reason }, 503);
    }
  });
  return app;
}
