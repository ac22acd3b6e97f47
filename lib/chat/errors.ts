/**
 * `ChatError`: a failure of a chat service call that maps to a JSON:API error (REST) or a
 * reason string (live). Thrown from OrderedLog `prepare` callbacks so nothing is written.
 */
import { HttpError, JSON_API } from "../http/errors.ts";

/** A chat failure with its JSON:API error (status, title, detail, source). */
export class ChatError extends HttpError {
  /** JSON:API `title`. */
  readonly title: string;
  /** JSON:API `detail`. */
  readonly detail?: string;
  /** JSON:API `source` (`{ pointer }` or `{ parameter }`). */
  readonly source?: Record<string, string>;

  /** Builds the error; the message is `title: detail`; the response is JSON:API. */
  constructor(status: number, title: string, detail?: string, source?: Record<string, string>) {
    const error: Record<string, unknown> = { status: String(status), title };
    if (detail !== undefined) error.detail = detail;
    if (source !== undefined) error.source = source;
    super(status, detail ? `${title}: ${detail}` : title, { errors: [error] }, JSON_API);
    this.name = "ChatError";
    this.title = title;
    this.detail = detail;
    this.source = source;
  }
}

/** 404 for a missing record of `kind` (e.g. "Thread"). */
export function notFound(kind: string, id: string): ChatError {
  return new ChatError(404, "Not Found", `${kind} ${id} does not exist.`);
}

/** 409 for a conflict (duplicate id, illegal transition, ...). */
export function conflict(detail: string): ChatError {
  return new ChatError(409, "Conflict", detail);
}

/** 422 for a semantically invalid request, pointing at the offending member. */
export function unprocessable(detail: string, pointer?: string): ChatError {
  return new ChatError(422, "Unprocessable Entity", detail, pointer ? { pointer } : undefined);
}
