/**
 * The chat store's refusals as `ApiError`s (404 missing record, 409 conflict, 422 invalid),
 * answered in the CHAT surface's shape (REST) or as a reason string (live). Thrown from
 * OrderedLog `prepare` callbacks so nothing is written.
 */
import { ApiError } from "../http/errors.ts";

/** 404 for a missing record of `kind` (e.g. "Thread"). */
export function notFound(kind: string, id: string): ApiError {
  return new ApiError(404, `${kind} ${id} does not exist.`);
}

/** 409 for a conflict (duplicate id, illegal transition, ...). */
export function conflict(detail: string): ApiError {
  return new ApiError(409, detail);
}

/** 422 for a semantically invalid request, pointing at the offending member. */
export function unprocessable(detail: string, pointer?: string): ApiError {
  return new ApiError(422, detail, pointer ? { source: { pointer } } : {});
}
