/** JSON:API error bodies and safe JSON body reading, shared by every HTTP surface. */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

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
