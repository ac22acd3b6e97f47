/**
 * Read-your-writes across nodes (docs/cluster.md "Reads on other nodes, and read-your-writes"), at
 * the HTTP edge: every write reply in clustered mode carries `Switchboard-Position` (the highest
 * log position a write of the request was applied at, else the position this node had applied when
 * it answered), and a `GET` with `Switchboard-Min-Position: N` is answered once this node has
 * applied position N, or with 503 after the write deadline. On one node both headers are accepted
 * and satisfied at once.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { MiddlewareHandler } from "hono";
import { StorageUnavailableError } from "../store/errors.ts";

/** The request being answered, as the replicated store sees it: the positions its writes
 * were applied at are noted here. */
export interface RequestPositions {
  position: number;
}

/** Holds the current HTTP request's positions across its awaits (clustered mode only). */
export const requestPositions = new AsyncLocalStorage<RequestPositions>();

/** What the edge needs of the replicated store. */
export interface PositionSource {
  readonly applied: number;
  readonly writeDeadlineMs: number;
  caughtUp(seq: number, ms: number): Promise<boolean>;
}

/** The header a read carries to wait for a position. */
export const MIN_POSITION_HEADER = "switchboard-min-position";
/** The header on every write reply. */
export const POSITION_HEADER = "Switchboard-Position";

/** A requested minimum position: a non-negative integer, else undefined (ignored). */
export function parsePosition(raw: unknown): number | undefined {
  const n = typeof raw === "number"
    ? raw
    : typeof raw === "string" && /^\s*\d+\s*$/.test(raw)
    ? Number(raw)
    : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Why a read or join that waited for a position gets no answer. */
export const NOT_CAUGHT_UP = "not caught up";

/**
 * A join's `min_position` check (SocketDeps.caughtUp): null once `env` has applied the
 * position (at once when the param is absent or not a position), else `NOT_CAUGHT_UP` after
 * `deadlineMs`.
 */
export async function joinCaughtUp(
  env: PositionSource,
  minPosition: unknown,
  deadlineMs: number,
): Promise<string | null> {
  const min = parsePosition(minPosition);
  return min === undefined || await env.caughtUp(min, deadlineMs) ? null : NOT_CAUGHT_UP;
}

/**
 * The router middleware of read-your-writes reads: a GET or HEAD carrying
 * `Switchboard-Min-Position: N` goes on once this node applied N, or is refused (503, thrown
 * as a storage refusal, so the route's surface answers it in its own shape) after the write
 * deadline.
 */
export function minPositionReads(source: PositionSource): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") {
      const min = parsePosition(c.req.header(MIN_POSITION_HEADER));
      // Asked even when applied that far: a node rebuilding its store is never caught up.
      if (min !== undefined && !(await source.caughtUp(min, source.writeDeadlineMs))) {
        throw new StorageUnavailableError(
          `${NOT_CAUGHT_UP} to log position ${min} (applied ${source.applied})`,
        );
      }
    }
    await next();
  };
}

/**
 * Answers a write `req` with `handle` and puts the write's log position (or, when it wrote
 * nothing, the node's applied position) in its `Switchboard-Position` header.
 */
export async function withPositions(
  source: PositionSource,
  req: Request,
  handle: () => Response | Promise<Response>,
): Promise<Response> {
  if (req.method === "GET" || req.method === "HEAD") return handle();
  const ctx: RequestPositions = { position: 0 };
  const res = await requestPositions.run(ctx, handle);
  const position = ctx.position || source.applied;
  try {
    res.headers.set(POSITION_HEADER, String(position));
    return res;
  } catch {
    // Immutable headers (a fetched response passed through): copy it.
    const copy = new Response(res.body, res);
    copy.headers.set(POSITION_HEADER, String(position));
    return copy;
  }
}
