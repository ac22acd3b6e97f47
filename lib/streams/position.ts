/**
 * The one `StreamPosition { offset, epoch }` of every ordered product and its wire form. A
 * product declares only its wire names (`PositionWire`: `log_id` for objects and chat, `serial`
 * for channels); the client's `after_{offset}` and `epoch` join params are parsed here, refused
 * with one wording (`invalid after_{offset}`, `invalid epoch`), and the join reply's position
 * fields (`epoch`, `replay`, `first_{offset}`, the deprecated `reset`) are added here, the same
 * way for every product and protocol (docs/protocol.md "Epochs").
 */
/** A client's place in one stream: the position it has seen up to, in the epoch it saw it in. */
export interface StreamPosition {
  /** The last position the client has (`after_serial` / `after_log_id`). */
  offset: number;
  /** The stream epoch `offset` belongs to; undefined when the client sent none. */
  epoch?: string;
}

/** How one product names positions on the wire. */
export interface PositionWire {
  /** The position's field name: `log_id` or `serial` (join param `after_{offset}`, reply
   * fields `{offset}` and `first_{offset}`). */
  offset: string;
  /**
   * Also flag a reset reply with `reset: true` (objects and chat replied so before `replay`
   * existed there; kept for one release so clients that read it keep working).
   */
  legacyReset?: boolean;
}

/** The position names of Durable Objects and chat threads. */
export const LOG_ID: PositionWire = { offset: "log_id", legacyReset: true };
/** The position names of channels (Phoenix and Pusher alike). */
export const SERIAL: PositionWire = { offset: "serial" };

/** Longest epoch a client may send back. */
const MAX_EPOCH_LENGTH = 64;

/**
 * Reads the client's position from its join params (Phoenix join payload or Pusher
 * `pusher:subscribe` data): `after_{offset}` absent (or null or "") -> undefined (no replay);
 * a non-negative safe integer or a string of at most 15 digits -> the position; `epoch`, when
 * sent, a string of at most 64 characters. Anything else -> the join refusal reason.
 */
export function readPosition(
  wire: PositionWire,
  params: Record<string, unknown>,
): StreamPosition | undefined | { error: string } {
  const name = `after_${wire.offset}`;
  const offset = parseOffset(params[name]);
  if (offset === null) return { error: `invalid ${name}` };
  const epoch = parseEpoch(params.epoch);
  if (epoch === null) return { error: "invalid epoch" };
  if (offset === undefined) return undefined;
  return epoch === undefined ? { offset } : { offset, epoch };
}

/** True when `readPosition` refused the params. */
export function isRefusal(
  p: StreamPosition | undefined | { error: string },
): p is { error: string } {
  return p !== undefined && "error" in p;
}

function parseOffset(raw: unknown): number | undefined | null {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (typeof raw === "number") return Number.isSafeInteger(raw) && raw >= 0 ? raw : null;
  if (typeof raw === "string" && /^\d{1,15}$/.test(raw)) return Number(raw);
  return null;
}

function parseEpoch(raw: unknown): string | undefined | null {
  if (raw === undefined || raw === null || raw === "") return undefined;
  return typeof raw === "string" && raw.length <= MAX_EPOCH_LENGTH ? raw : null;
}

/**
 * The position fields of a join reply (`outcome` is joinStream's `ReplayOutcome`): always the
 * snapshot's `epoch`; when the client gave a position, `replay` (`complete`, `partial` or
 * `reset`) and `first_{offset}` (the oldest retained position); on a reset, `reset: true` too
 * for products with `legacyReset`.
 */
export function replyFields(
  wire: PositionWire,
  from: StreamPosition | undefined,
  epoch: string,
  outcome: { replay: string; first: number },
): Record<string, unknown> {
  if (from === undefined) return { epoch };
  const fields: Record<string, unknown> = {
    epoch,
    replay: outcome.replay,
    [`first_${wire.offset}`]: outcome.first,
  };
  if (outcome.replay === "reset" && wire.legacyReset) fields.reset = true;
  return fields;
}
