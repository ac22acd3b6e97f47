/**
 * The one join sequence of every ordered product (Durable Objects, channels, chat threads).
 *
 * Guarantees, given a log that publishes each stream strictly in position order after commit
 * (see `StreamLog`):
 * - Replay before the reply: entries after the client's position are pushed oldest first, then
 *   the ok reply with a snapshot at position N, then live events from N + 1. Nothing is dropped
 *   or duplicated between replay, snapshot and live delivery.
 * - Bounded replay: a long backlog is pushed in chunks, each waiting until the socket's queue
 *   has drained (`JoinContext.drained`), so a client that reads can replay any retained history
 *   and a client that stops reading never makes the server buffer it all. Only the last few
 *   entries, the snapshot and the subscription happen in one synchronous turn (the turn in
 *   which N is published), which is what makes the hand-over to live delivery gap-free.
 */
import type { JoinContext } from "../socket/handler.ts";
import type { LogRecord, StreamLog } from "./stream_log.ts";
import { record } from "../metrics/mod.ts";
import { type PositionWire, replyFields, type StreamPosition } from "./position.ts";

/** Entries read from the log per step of a long replay. */
export const REPLAY_CHUNK = 256;
/** Queue size at which a replay stops pushing until the socket has drained (2 MiB). */
export const REPLAY_HIGH_WATER = 2 * 1024 * 1024;
/** A replay switches to the final synchronous turn when at most this many entries are left. */
export const REPLAY_FINAL_MAX = 16;

/** What happened to the client's position, handed to `reply`. */
export interface ReplayOutcome {
  /**
   * `none`: no position given (or nothing to replay); `complete`: every entry after it was
   * pushed; `partial`: some were no longer retained and were skipped; `reset`: the client's
   * position is unusable here (older than the retained history with `gap: "reset"`, from
   * another epoch, or one the client may hold entries of another history at: `replacedAt`),
   * nothing was replayed and the snapshot stands alone.
   */
  replay: "none" | "complete" | "partial" | "reset";
  /** Oldest retained position at the snapshot. */
  first: number;
}

/** How one product joins one stream. */
export interface StreamJoinSpec<E, S> {
  log: StreamLog;
  stream: string;
  /** The client's position (see `readPosition`), undefined for no replay. */
  from: StreamPosition | undefined;
  /** The product's position names; the reply's position fields are added with them. */
  wire: PositionWire;
  /**
   * Retained records in (after, upTo], oldest first, at most `limit`, and the oldest retained
   * position (products with a retention window, like channels, apply it here). Defaults to the
   * whole log.
   */
  read?(after: number, upTo: number, limit: number): { records: LogRecord<E>[]; first: number };
  /** `skip` (default): replay what is retained and report `partial`; `reset`: replay nothing. */
  gap?: "skip" | "reset";
  /** The wire events of one record (usually one). */
  events(record: LogRecord<E>): [string, unknown][];
  /** Reads the product's snapshot synchronously; `position` is its N. */
  snapshot(): { position: number; value: S };
  /**
   * Builds the ok reply in the turn N is published, just before the subscription starts (a
   * product may announce presence here). The stream layer adds the position fields (`epoch`,
   * `replay`, `first_*`: see `replyFields`).
   */
  reply(value: S, outcome: ReplayOutcome): Record<string, unknown>;
}

/**
 * Runs the join sequence on `ctx`: replay, reply, subscribe. Resolves `true` once the member
 * is live, `false` when the join ended on the way (the socket closed or the topic was
 * rejoined), in which case nothing more is sent.
 */
export async function joinStream<E, S>(
  ctx: JoinContext,
  spec: StreamJoinSpec<E, S>,
): Promise<boolean> {
  const { log, stream } = spec;
  const read = spec.read ?? ((after: number, upTo: number, limit: number) => {
    const count = Math.min(limit, upTo - after);
    return {
      records: count > 0
        ? log.after<E>(stream, after, count).filter((r) => r.position <= upTo)
        : [],
      first: log.first(stream),
    };
  });
  const push = (rec: LogRecord<E>) => {
    for (const [event, payload] of spec.events(rec)) ctx.push(event, payload);
  };

  let pos = spec.from?.offset;
  let partial = false;
  // A position from another epoch, or one the client may hold entries of another history
  // at (a clustered node that diverged sent them), is not resumed.
  const replaced = (at: number | undefined) =>
    at !== undefined && log.replacedAt(stream, at, spec.from?.epoch);
  let reset = (spec.from?.epoch !== undefined && spec.from.epoch !== log.epoch(stream)) ||
    replaced(pos);
  if (reset) pos = undefined;
  // Long backlog: bounded chunks, each after the socket has drained.
  while (pos !== undefined) {
    const head = log.head(stream);
    if (head - pos <= REPLAY_FINAL_MAX) break;
    const { records, first } = read(pos, head, REPLAY_CHUNK);
    if (pos < first - 1) {
      if (spec.gap === "reset") {
        reset = true;
        pos = undefined;
        break;
      }
      partial = true;
      pos = first - 1;
    }
    if (records.length === 0) break;
    let i = 0;
    while (i < records.length) {
      // One network write per run of pushes. Large entries end a run early, so the queue
      // never nears the slow-consumer bound.
      ctx.corked(() => {
        do push(records[i++]); while (i < records.length && ctx.buffered() <= REPLAY_HIGH_WATER);
      });
      pos = records[i - 1].position;
      if (!(await ctx.drained())) return false;
    }
    record.replay(records.length);
  }
  if (pos !== undefined && !(await ctx.drained())) return false;

  // Final turn: snapshot at N; when N is published, the rest of the replay, reply, subscribe.
  const snap = spec.snapshot();
  const epoch = log.epoch(stream);
  const n = snap.position;
  return await new Promise<boolean>((resolve, reject) => {
    log.whenPublished(stream, n, () =>
      ctx.corked(() => {
        try {
          let first = log.first(stream);
          let replay: ReplayOutcome["replay"] = reset ? "reset" : "none";
          // A position beyond the head belongs to another life of the stream (it was purged).
          if (pos !== undefined && (pos > n || replaced(spec.from?.offset))) {
            pos = undefined;
            replay = "reset";
          }
          if (pos !== undefined) {
            const rest = read(pos, n, Infinity);
            first = rest.first;
            if (pos < first - 1 && spec.gap === "reset") replay = "reset";
            else {
              if (pos < first - 1) partial = true;
              rest.records.forEach(push);
              record.replay(rest.records.length);
              replay = partial ? "partial" : "complete";
            }
          }
          const outcome = { replay, first };
          ctx.accept({
            ...spec.reply(snap.value, outcome),
            ...replyFields(spec.wire, spec.from, epoch, outcome),
          });
          ctx.subscribe();
          resolve(true);
        } catch (err) {
          reject(err); // the join crashes; the log's publishing goes on
        }
      }), () => resolve(false));
  });
}
