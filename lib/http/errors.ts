/**
 * HTTP errors of every surface: the thrown `HttpError` type that carries its own response, the
 * one mapping of anything thrown to a response (`errorResponse`, used by the server's single
 * error handler), JSON:API error bodies and safe JSON body reading.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { StorageUnavailableError } from "../store/errors.ts";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { errorFields, log } from "../log/mod.ts";

/** One entry of a JSON:API `errors` array. */
export interface JsonApiErrorObject {
  status: string;
  title: string;
  detail?: string;
  source?: object;
}

/**
 * Answers `status` with `{ errors: [ { status, title, detail?, source? } ] }` (application/json).
 * `detail` and `source` are omitted when not given.
 */
export function jsonApiError(
  c: Context,
  status: number,
  title: string,
  detail?: string,
  source?: object,
): Response {
  const error: JsonApiErrorObject = { status: String(status), title };
  if (detail !== undefined) error.detail = detail;
  if (source !== undefined) error.source = source;
  return c.json({ errors: [error] }, status as ContentfulStatusCode);
}

/**
 * Reads the request body as JSON. `{ ok: false }` when it is empty or not valid JSON (callers
 * answer 400); otherwise `{ ok: true, body }` with any JSON value.
 */
export async function readJsonBody(
  c: Context,
): Promise<{ ok: true; body: unknown } | { ok: false }> {
  try {
    const text = await c.req.text();
    return { ok: true, body: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * A failure that carries its response in its surface's shape (`ObjectError`: `{ error }`,
 * `ChatError`: JSON:API). Handlers throw it; `errorResponse` answers with `toResponse()`.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly #body: unknown;
  readonly #contentType: string;

  constructor(status: number, message: string, body: unknown, contentType = "application/json") {
    super(message);
    this.status = status;
    this.#body = body;
    this.#contentType = contentType;
  }

  /** The response this error answers with. */
  toResponse(): Response {
    return new Response(JSON.stringify(this.#body), {
      status: this.status,
      headers: { "content-type": this.#contentType },
    });
  }
}

/** JSON:API's media type (chat REST). */
export const JSON_API = "application/vnd.api+json";

/**
 * The one mapping of a thrown error to a response, in the shape of the surface `path` belongs
 * to: `HttpError` answers itself; storage refusing a write is 503; Hono's HTTPException (e.g.
 * malformed JSON) keeps its status; anything else is a logged 500.
 */
export function errorResponse(err: unknown, path: string): Response {
  if (err instanceof HttpError) return err.toResponse();
  let status = 500;
  let detail: string | undefined;
  if (err instanceof StorageUnavailableError) {
    status = 503;
    detail = err.reason;
  } else if (err instanceof HTTPException) {
    status = err.status;
    detail = err.message || undefined;
  } else {
    log.error("unhandled request error", { path, ...errorFields(err) });
  }
  if (path.startsWith("/api/v1/objects/")) {
    return new HttpError(status, detail ?? TITLES[status], { error: detail ?? TITLES[status] }).toResponse();
  }
  const e: JsonApiErrorObject = { status: String(status), title: TITLES[status] ?? "Error" };
  if (detail !== undefined) e.detail = detail;
  const type = path.startsWith("/api/chat/") ? JSON_API : "application/json";
  return new HttpError(status, e.title, { errors: [e] }, type).toResponse();
}

/** Reason phrases of the statuses this service answers with. */
export const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};
