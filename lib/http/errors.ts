/**
 * The one error type of every HTTP surface (`ApiError`: status, machine title/code, detail,
 * source), the normalisation of anything thrown into it (`toApiError`: storage refusing a write
 * is 503, Hono's HTTPException keeps its status, anything else is a logged 500), the reason
 * phrases, and safe JSON body reading. How each surface shapes an `ApiError` into a response
 * is in ./surfaces.ts.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { StorageUnavailableError } from "../store/errors.ts";
import { errorFields, log } from "../log/mod.ts";

/** Reason phrases of the statuses this service answers with (the default `title`). */
export const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Machine codes of refusals a surface may word its own way (see ./surfaces.ts). */
export type ApiErrorCode = "body_too_large";

/** What an `ApiError` is built from besides its status and detail. */
export interface ApiErrorOptions {
  /** Machine reason (JSON:API `title`); defaults to the status's reason phrase. */
  title?: string;
  /** What the error points at: `{ pointer }` into the body or `{ parameter }` of the query. */
  source?: Record<string, string>;
  /** A refusal some surface words its own way (e.g. Pusher's body-size text). */
  code?: ApiErrorCode;
  /** Every error of a refusal that has several (e.g. one per validation issue; same status). */
  all?: ApiError[];
}

/**
 * The failure every HTTP handler, middleware and direct route throws (or hands to its
 * surface): an HTTP status, a machine `title`, an optional human `detail` and `source`. It
 * carries no body: the surface the route belongs to shapes it (./surfaces.ts).
 */
export class ApiError extends Error {
  readonly status: number;
  /** Machine reason: JSON:API `title`; the status's reason phrase unless given. */
  readonly title: string;
  /** Human explanation (JSON:API `detail`, objects' `error`, Pusher's text). */
  readonly detail?: string;
  /** JSON:API `source`. */
  readonly source?: Record<string, string>;
  /** See `ApiErrorOptions.code`. */
  readonly code?: ApiErrorCode;
  /** See `ApiErrorOptions.all`; undefined for a single error. */
  readonly all?: ApiError[];

  /** Builds the error; its message is `detail` (or the title when there is none). */
  constructor(status: number, detail?: string, options: ApiErrorOptions = {}) {
    const title = options.title ?? TITLES[status] ?? "Error";
    super(detail ?? title);
    this.name = "ApiError";
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.source = options.source;
    this.code = options.code;
    this.all = options.all;
  }
}

/**
 * Anything thrown while answering a request, as an `ApiError`: itself when it is one; storage
 * refusing a write is 503 with its reason; Hono's HTTPException keeps its status and message;
 * anything else is logged (with `path`) and is a 500.
 */
export function toApiError(err: unknown, path: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof StorageUnavailableError) return new ApiError(503, err.reason);
  if (err instanceof HTTPException) return new ApiError(err.status, err.message || undefined);
  log.error("unhandled request error", { path, ...errorFields(err) });
  return new ApiError(500);
}

/** JSON:API's media type (chat REST). */
export const JSON_API = "application/vnd.api+json";

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
