import { Hono } from "hono";

/** `GET /healthz`: 200 `{ status: "ok" }` once HTTP and WebSocket traffic are accepted. */
export function healthRoutes(): Hono {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  return app;
}
