/** Small helpers to declare chat routes once for validation and for the OpenAPI document. */
import { createRoute, type OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ChatServices } from "../services.ts";
import type { ChatEnv } from "./http.ts";
import { JSON_API } from "./http.ts";
import { ErrorDocument } from "./schemas.ts";

/** The router every chat route file registers on. */
export type ChatRouter = OpenAPIHono<ChatEnv>;

/** What route files receive. */
export interface RouteDeps {
  router: ChatRouter;
  services: ChatServices;
}

/** A request body accepted as JSON:API or plain JSON. */
export function body(schema: z.ZodTypeAny, required = true) {
  return {
    required,
    content: {
      [JSON_API]: { schema },
      "application/json": { schema },
    },
  };
}

const ERROR_TEXT: Record<number, string> = {
  400: "Bad request (malformed JSON, bad query parameter or cursor)",
  401: "Missing or wrong X-App-Key / X-App-Secret",
  404: "Resource not found",
  409: "Conflict (duplicate id, illegal status transition, type mismatch)",
  415: "Unsupported Content-Type",
  422: "Validation failed",
};

/** The success response plus the listed error responses. */
export function responses(
  status: number,
  description: string,
  schema?: z.ZodTypeAny,
  errors: number[] = [],
) {
  const out: Record<string, unknown> = {
    [status]: schema ? { description, content: { [JSON_API]: { schema } } } : { description },
  };
  for (const e of [401, ...errors]) {
    out[e] = { description: ERROR_TEXT[e], content: { [JSON_API]: { schema: ErrorDocument } } };
  }
  return out;
}

/** Declaration of one route (OpenAPI path syntax `{id}`). */
export interface RouteSpec {
  method: "get" | "post" | "patch" | "delete";
  path: string;
  summary: string;
  tags: string[];
  request?: Record<string, unknown>;
  responses: Record<string, unknown>;
}

/**
 * Registers a route: the zod schemas in `spec.request` validate params/query/body (failures go
 * through the router's defaultHook) and the handler reads `c.req.valid(...)`.
 */
export function register(
  router: ChatRouter,
  spec: RouteSpec,
  handler: (c: Context<ChatEnv>) => Response | Promise<Response>,
): void {
  const route = createRoute(spec as Parameters<typeof createRoute>[0]);
  router.openapi(route, handler as never);
}

/** `c.req.valid(target)` without the route's static types. */
export function valid<T = Record<string, any>>(
  c: Context<ChatEnv>,
  target: "param" | "query" | "json",
): T {
  return (c.req as unknown as { valid(t: string): T }).valid(target);
}
