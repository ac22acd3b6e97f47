// The health routes: `/healthz` (liveness) and `/readyz` (readiness: storage takes a durable
// write).
import { Hono } from "hono";
import type { Storage } from "../lib/store/storage.ts";

/**
 * `GET /healthz`: liveness, 200 `{ status: "ok" }` once HTTP and WebSocket traffic are
 * accepted. `GET /readyz`: readiness, 200 `{ status: "ready" }` when storage can take a write,
 * else 503 `{ status: "unavailable", reason }` (disk full, shutting down; in clustered mode no
 * usable NATS connection, or the log out of reach for longer than the write deadline). It never
 * writes and waits on nothing: it answers from what the node already knows
 * (`Storage.unavailable`), at once, also while writes stall.
 */
export function healthRoutes(env: Storage): Hono {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", (c) => {
    const reason = env.unavailable();
    if (reason) return c.json({ status: "unavailable", reason }, 503);
    return c.json({ status: "ready" });
  });
  return app;
}
