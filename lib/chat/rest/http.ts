/**
 * HTTP plumbing of the chat REST surface: JSON:API responses and errors, credentials, the
 * content-type gate (415) and the zod validation hook (422). Thrown errors (ChatError and the
 * rest) are answered by the server's one error handler (lib/http/errors.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import type { ZodError } from "zod";
import type { App, AppRegistry } from "../../config/apps.ts";
import { appFromCredentials } from "../../auth/credentials.ts";
import { JSON_API, TITLES } from "../../http/errors.ts";

/** The JSON:API media type of every response. */
export { JSON_API };

/** Hono environment of chat routes: `c.get("app")` is the authenticated app. */
export type ChatEnv = { Variables: { app: App } };

/** One JSON:API error object. */
export interface ErrorObject {
  status: string;
  title: string;
  detail?: string;
  source?: Record<string, string>;
}


/** A JSON:API document response with the JSON:API media type. */
export function send(_c: Context, status: number, body: unknown): Response {
  if (status === 204) return new Response(null, { status });
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": JSON_API },
  });
}

/** An `{ errors: [...] }` response; the status of the first error is the HTTP status. */
export function sendErrors(c: Context, status: number, errors: ErrorObject[]): Response {
  return send(c, status, { errors });
}

/** A single-error response; the title defaults to the status's reason phrase. */
export function sendError(
  c: Context,
  status: number,
  detail?: string,
  source?: Record<string, string>,
  title = TITLES[status] ?? "Error",
): Response {
  const e: ErrorObject = { status: String(status), title };
  if (detail !== undefined) e.detail = detail;
  if (source !== undefined) e.source = source;
  return sendErrors(c, status, [e]);
}

/** Credentials middleware: 401 `{ errors: [{ status: "401", title: "Unauthorized" }] }`. */
export function chatCredentials(registry: AppRegistry): MiddlewareHandler<ChatEnv> {
  return async (c, next) => {
    const app = appFromCredentials(
      registry,
      c.req.header("X-App-Key"),
      c.req.header("X-App-Secret"),
    );
    if (!app) return sendError(c, 401);
    if (app.enabled === false) return sendError(c, 403, "app disabled");
    c.set("app", app);
    await next();
  };
}

const ACCEPTED_TYPES = new Set(["application/json", JSON_API]);

/** 415 for a body-carrying request whose Content-Type is neither JSON nor JSON:API. */
export const contentTypeGate: MiddlewareHandler = async (c, next) => {
  if (c.req.method === "POST" || c.req.method === "PATCH" || c.req.method === "PUT") {
    const type = c.req.header("Content-Type");
    if (type !== undefined) {
      const essence = type.split(";")[0].trim().toLowerCase();
      if (!ACCEPTED_TYPES.has(essence)) {
        return sendError(c, 415, `Content-Type must be ${JSON_API} or application/json.`);
      }
    }
  }
  await next();
};

/** JSON pointer (`/data/attributes/x`) or query parameter of a zod issue path. */
function sourceOf(target: string, path: PropertyKey[]): Record<string, string> {
  if (target === "query") return { parameter: String(path[0] ?? "") };
  if (target === "param") return { parameter: String(path[0] ?? "") };
  return { pointer: "/" + path.map(String).join("/") };
}

/**
 * The `defaultHook` of the chat OpenAPIHono: validation failures answer 422 with one error per
 * zod issue (query problems answer 400, as JSON:API asks for bad query parameters). A body
 * whose only problem is `data.type` answers 409, as JSON:API prescribes for a type mismatch.
 */
export function validationHook(
  result: { target: string; success: boolean; error?: ZodError },
  c: Context,
): Response | undefined {
  if (result.success || !result.error) return undefined;
  const issues = result.error.issues;
  const status = result.target === "query"
    ? 400
    : issues.every((i) => i.path.join(".") === "data.type")
    ? 409
    : 422;
  const errors = issues.map((i) => ({
    status: String(status),
    title: status === 400 ? "Invalid Query Parameter" : TITLES[status],
    detail: i.message,
    source: sourceOf(result.target, i.path),
  }));
  return sendErrors(c, status, errors);
}
