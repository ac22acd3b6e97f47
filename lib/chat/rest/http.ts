/**
 * HTTP plumbing of the chat REST surface: JSON:API responses, the content-type gate (415) and
 * the zod validation hook (422). Refusals throw `ApiError`; the server answers them in the
 * CHAT surface's shape (lib/http/surfaces.ts); credentials are `appCredentials(apps, CHAT)`.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { ZodError } from "zod";
import type { App } from "../../config/apps.ts";
import { ApiError, JSON_API } from "../../http/errors.ts";

/** The JSON:API media type of every response. */
export { JSON_API };

/** Hono environment of chat routes: `c.get("app")` is the authenticated app. */
export type ChatEnv = { Variables: { app: App } };

/** A JSON:API document response with the JSON:API media type. */
export function send(_c: Context, status: number, body: unknown): Response {
  if (status === 204) return new Response(null, { status });
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": JSON_API },
  });
}

const ACCEPTED_TYPES = new Set(["application/json", JSON_API]);

/** 415 for a body-carrying request whose Content-Type is neither JSON nor JSON:API. */
export const contentTypeGate: MiddlewareHandler = async (c, next) => {
  if (c.req.method === "POST" || c.req.method === "PATCH" || c.req.method === "PUT") {
    const type = c.req.header("Content-Type");
    if (type !== undefined) {
      const essence = type.split(";")[0].trim().toLowerCase();
      if (!ACCEPTED_TYPES.has(essence)) {
        throw new ApiError(415, `Content-Type must be ${JSON_API} or application/json.`);
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
 * The `defaultHook` of the chat OpenAPIHono: validation failures throw 422 with one error per
 * zod issue (query problems 400, as JSON:API asks for bad query parameters). A body whose only
 * problem is `data.type` is 409, as JSON:API prescribes for a type mismatch.
 */
export function validationHook(
  result: { target: string; success: boolean; error?: ZodError },
  _c: Context,
): undefined {
  if (result.success || !result.error) return undefined;
  const issues = result.error.issues;
  const status = result.target === "query"
    ? 400
    : issues.every((i) => i.path.join(".") === "data.type")
    ? 409
    : 422;
  const all = issues.map((i) =>
    new ApiError(status, i.message, {
      title: status === 400 ? "Invalid Query Parameter" : undefined,
      source: sourceOf(result.target, i.path),
    })
  );
  throw new ApiError(status, all[0]?.detail, { all });
}
