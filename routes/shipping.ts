/** What a front-end developer touches first: the browser SDK bundle and the playground. */
import { Hono } from "hono";
import type { ProductDeps, ProductModule } from "../lib/product.ts";
import { CLIENT_BUNDLE, CLIENT_BUNDLE_ETAG } from "../lib/generated/client_bundle.ts";
import { playgroundRoutes } from "./playground/routes.ts";
import { DemoAgents } from "../lib/playground/demo_agent.ts";
import { faviconRoutes } from "./favicon.ts";

/**
 * `GET /sdk/client.js` and `GET /favicon.ico` (always) and, unless `--no-playground` / `PLAYGROUND=0`, the playground
 * page at `GET /` with its `/playground/api/*` backend (development app only).
 */
export function createShipping(deps: ProductDeps): ProductModule {
  const routes = new Hono();
  routes.get("/sdk/client.js", (c) => sdkResponse(c.req.header("if-none-match")));
  routes.route("/", faviconRoutes());
  let agents: DemoAgents | undefined;
  if (deps.config.playground) {
    agents = new DemoAgents();
    routes.route("/", playgroundRoutes(deps, agents));
  }
  return { routes, close: () => agents?.close() };
}

/**
 * The bundle with a strong ETag. `no-cache` makes browsers revalidate each load (a cheap 304),
 * so an upgraded server never leaves a stale SDK in a cache. `Access-Control-Allow-Origin: *`
 * lets a page on another origin import it as a module (it is public code, sent without
 * credentials).
 */
export function sdkResponse(ifNoneMatch: string | undefined): Response {
  const headers = {
    "content-type": "text/javascript; charset=utf-8",
    "cache-control": "public, no-cache",
    "access-control-allow-origin": "*",
    etag: CLIENT_BUNDLE_ETAG,
  };
  if (ifNoneMatch && etagMatches(ifNoneMatch, CLIENT_BUNDLE_ETAG)) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(CLIENT_BUNDLE, { status: 200, headers });
}

/** RFC 9110 If-None-Match: `*`, or a list of (possibly weak) tags compared weakly. */
function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === "*") return true;
  return header.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}
