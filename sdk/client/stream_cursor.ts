/**
 * The one resume cursor of the client SDK, shared by channels (`serial`), Durable Objects and
 * chat threads (`log_id`): the client's position in one stream and the epoch it belongs to,
 * sent back as `after_{offset}` + `epoch` on every rejoin, advanced by each applied event
 * (duplicates from a replay overlap are recognised), and moved by the join reply, a reset and a
 * purge the same way for every product (docs/protocol.md "Epochs").
 */

/** A join reply's position fields, as every product sends them. */
export interface PositionReply {
  epoch?: string;
  replay?: string;
  /** Deprecated server flag (objects and chat before `replay`); read as `replay: "reset"`. */
  reset?: boolean;
  [field: string]: unknown;
}

/** See the module comment. */
export class StreamCursor {
  /** The position field's name on the wire: `serial` or `log_id`. */
  readonly name: "serial" | "log_id";
  /** The last position applied; undefined until one is known (then no replay is asked for). */
  offset: number | undefined;
  /** The stream epoch `offset` belongs to, as the server last said. */
  epoch: string | undefined;

  constructor(name: "serial" | "log_id", offset?: number) {
    this.name = name;
    this.offset = offset;
  }

  /** The join params that resume from here: `{ after_{name}, epoch? }`, or `{}` with no position. */
  params(): Record<string, unknown> {
    if (this.offset === undefined) return {};
    const p: Record<string, unknown> = { [`after_${this.name}`]: this.offset };
    if (this.epoch !== undefined) p.epoch = this.epoch;
    return p;
  }

  /** Starts from `offset` (a resume position the app gave, before anything was applied). */
  seek(offset: number): void {
    this.offset = offset;
  }

  /**
   * Takes a join reply: its epoch, and its position (`reply[name]`; a non-number, as on an
   * ephemeral channel, means none). Returns true when the reply is a reset: the client's
   * position was unusable and the snapshot replaces what it had.
   */
  joined(reply: PositionReply): boolean {
    const reset = reply.replay === "reset" || reply.reset === true;
    if (typeof reply.epoch === "string") this.epoch = reply.epoch;
    const at = reply[this.name];
    if (typeof at !== "number") this.offset = undefined;
    else this.offset = reset || this.offset === undefined ? at : Math.max(this.offset, at);
    return reset;
  }

  /** Takes an event at `position`: false when it was already applied (a replay overlap). */
  advance(position: number): boolean {
    if (this.offset !== undefined && position <= this.offset) return false;
    this.offset = position;
    return true;
  }

  /** The stream was purged: it restarts at 0 in `epoch` (when the event named it). */
  purged(epoch?: unknown): void {
    this.offset = 0;
    if (typeof epoch === "string") this.epoch = epoch;
  }
}
