/**
 * The HTTP surfaces and the one place each shapes an `ApiError` into its response: the native
 * API (JSON:API errors, application/json), the Durable Objects routes (`{ error }`), the chat
 * REST (JSON:API, application/vnd.api+json) and the Pusher REST API (plain text). Also which
 * surface a request belongs to: the surface of the routes the router matched for it
 * (`RouteSurfaces`), never a guess from the URL.
 */
import type { Context, Hono } from "hono";
import { matchedRoutes } from "hono/route";
import { MAX_BODY_BYTES } from "../limits.ts";
import { type ApiError, JSON_API, toApiError } from "./errors.ts";

/** A family of routes that answers errors in one shape. */
export interface Surface {
  /** Name, for logs and docs. */
  readonly name: string;
  /** The response this surface answers `err` with. */
  answer(err: ApiError): Response;
}

function json(status: number, body: unknown, type: string): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": type } });
}

/** One JSON:API error object: `{ status, title, detail?, source? }`. */
function entry(e: ApiError): Record<string, unknown> {
  const out: Record<string, unknown> = { status: String(e.status), title: e.title };
  if (e.detail !== undefined) out.detail = e.detail;
  if (e.source !== undefined) out.source = e.source;
  return out;
}

/** A JSON:API surface: `{ errors: [...] }` (one object per error) with media type `type`. */
function jsonApi(name: string, type: string): Surface {
  return { name, answer: (e) => json(e.status, { errors: (e.all ?? [e]).map(entry) }, type) };
}

/** The native API (channels, auth, spaces, shipping, health, the 404 fallback, credentials). */
export const NATIVE: Surface = jsonApi("native", "application/json");

/** The chat REST API: JSON:API with its own media type. */
export const CHAT: Surface = jsonApi("chat", JSON_API);

/** The Durable Objects routes: `{ error: detail }` (docs/http-api.md "Error shapes");
 * credentials answer as NATIVE. */
export const OBJECTS: Surface = {
  name: "objects",
  answer: (e) => json(e.status, { error: e.detail ?? e.title }, "application/json"),
};

const TEXT_PLAIN = "text/plain; charset=UTF-8";

/**
 * The Pusher REST API: its refusals are plain text, as Pusher's are. A failure of the server
 * itself (5xx: storage refusing a write, a bug) answers as NATIVE, as it always has.
 */
export const PUSHER: Surface = {
  name: "pusher",
  answer(e) {
    if (e.status >= 500) return NATIVE.answer(e);
    const text = e.code === "body_too_large"
      ? `Request body too large: the limit is ${MAX_BODY_BYTES} bytes`
      : e.detail ?? e.title;
    return new Response(text, { status: e.status, headers: { "content-type": TEXT_PLAIN } });
  },
};

/**
 * An `onError` handler answering in `surface`: for route sets also used on their own, outside
 * the server (e.g. `authRoutes` mounted in an app's own Hono), which has no server to map.
 */
export function answerIn(surface: Surface): (err: Error, c: Context) => Response {
  return (err, c) => surface.answer(toApiError(err, c.req.path));
}

/**
 * Which surface each mounted route belongs to. `mount` adds a product's routes to the server's
 * router and remembers their surface; `of(c)` is the surface of the first route matched for
 * the request that has one (NATIVE when none does: unknown paths, the server's own routes).
 */
export class RouteSurfaces {
  #owner = new WeakMap<object, Surface>();

  /** Mounts `routes` at `/` of `http`, owned by `surface`. */
  mount(http: Hono, routes: Hono, surface: Surface): void {
    const from = http.routes.length;
    http.route("/", routes);
    for (const r of http.routes.slice(from)) this.#owner.set(r, surface);
  }

  /** The surface the request in `c` belongs to. */
  of(c: Context): Surface {
    for (const r of matchedRoutes(c)) {
      const surface = this.#owner.get(r);
      if (surface) return surface;
    }
    return NATIVE;
  }

  /** The response to `err` thrown while answering `c`, in its surface's shape. */
  answer(err: unknown, c: Context): Response {
    return this.of(c).answer(toApiError(err, c.req.path));
  }
}
