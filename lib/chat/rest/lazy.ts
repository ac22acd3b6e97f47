/**
 * The chat REST routes, built on their first request. Building them constructs every zod
 * schema and OpenAPI route of the surface, which at start cost about 7 MB of resident memory
 * in the binary (the schemas, and the JIT compiling the code that builds them): a server whose
 * chat REST is never called no longer pays it (bench/README.md, "Start").
 *
 * The server mounts one route, `/api/chat/*`, the same paths the built routes cover (their last
 * route answers 404 for any other path under it). Its handler builds the routes once (every
 * request arriving meanwhile awaits the same promise) and passes the request on. Answers are
 * unchanged: errors are shaped by the CHAT surface as the server's error handler shapes them,
 * and the route template the built routes matched is handed back for the request metrics
 * (`routeTemplate`).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type { AppRegistry } from "../../config/apps.ts";
import { answerIn, CHAT } from "../../http/surfaces.ts";
import type { ChatServices } from "../services.ts";

/** Route templates matched by the lazily built routes, per request (read by `routeTemplate`). */
const templates = new WeakMap<Request, string>();

/** The route template that answered `c`: the built chat route's for a chat REST request. */
export function routeTemplate(c: Context): string {
  return templates.get(c.req.raw) ?? c.req.routePath;
}

/** The chat REST routes (mount at "/"), built on the first request under `/api/chat`. */
export function lazyChatRestRoutes(apps: AppRegistry, services: ChatServices): Hono {
  let built: Promise<Hono> | undefined;
  const build = async () => {
    const { chatRestRoutes } = await import("./mod.ts");
    const inner = new Hono();
    // Records the template of the route that answered, under the request the server holds.
    inner.use("*", async (c, next) => {
      const raw = c.req.raw;
      await next();
      templates.set(raw, c.req.routePath);
    });
    inner.route("/", chatRestRoutes(apps, services));
    inner.onError(answerIn(CHAT));
    return inner;
  };
  return new Hono().all("/api/chat/*", async (c) => {
    built ??= build();
    const routes = await built;
    // The server's middleware may have read the body already (its __proto__ check): pass on
    // the bytes it read, as the routes read them when they were the server's own.
    const req = c.req.raw.bodyUsed
      ? new Request(c.req.raw, { body: await c.req.arrayBuffer() })
      : c.req.raw;
    const res = await routes.fetch(req, c.env);
    const template = templates.get(req);
    if (template) templates.set(c.req.raw, template);
    return res;
  });
}
