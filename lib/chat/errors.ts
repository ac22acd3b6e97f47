/**
 * `ChatError`: a failure of a chat service call that maps to a JSON:API error (REST) or a
 * reason string (live). Thrown from OrderedLog `prepare` callbacks so nothing is written.
 */
export class ChatError extends Error {
  /** HTTP status: 400, 404, 409 or 422. */
  readonly status: number;
  /** JSON:API `title`. */
  readonly title: string;
  /** JSON:API `detail`. */
  readonly detail?: string;
  /** JSON:API `source` (`{ pointer }` or `{ parameter }`). */
  readonly source?: Record<string, string>;

  /** Builds the error; the message is `title: detail`. */
  constructor(status: number, title: string, detail?: string, source?: Record<string, string>) {
    super(detail ? `${title}: ${detail}` : title);
    this.name = "ChatError";
    this.status = status;
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
