/**
 * One product's face of the stream layer: binds a `StreamLog` to the hub, so appends are
 * published in position order after commit, joins follow the one sequence of `joinStream`,
 * and purges start a new epoch that subscribers are told about. Products pass addresses (see
 * `names.ts`) and their own entry -> event mapping; they never publish log entries themselves.
 */
import type { Hub } from "../hub/hub.ts";
import type { JoinContext } from "../socket/handler.ts";
import type { LogRecord, Prepared, StreamLog } from "./stream_log.ts";
import { joinStream, type StreamJoinSpec } from "./join.ts";
import { record } from "../metrics/mod.ts";
import type { StreamAddress } from "./names.ts";

/** Maps one stored entry at `position` to the wire events it is delivered (and replayed) as. */
export type EventsOf<E> = (position: number, entry: E) => [string, unknown][];

/** The join options a product gives; log, stream and the event mapping come from the stream. */
export type ProductJoin<E, S> = Omit<StreamJoinSpec<E, S>, "log" | "stream" | "events">;

/** See the module comment. */
export class ProductStream<E> {
  readonly log: StreamLog;
  #hub: Hub;
  #events: EventsOf<E>;

  constructor(log: StreamLog, hub: Hub, events: EventsOf<E>) {
    this.log = log;
    this.#hub = hub;
    this.#events = events;
  }

  /**
   * Appends atomically (see `StreamLog.append`), then broadcasts every entry's events on the
   * address's topic in position order; `after` runs once the batch is broadcast (webhooks).
   * `excludeSocketId` names a socket that does not get this batch live (Pusher's `socket_id`
   * exclusion); it still gets the entries on replay.
   */
  append<R>(
    addr: StreamAddress,
    prepare: (head: number) => Prepared<E, R>,
    after?: (first: number, entries: E[], result: R) => void,
    excludeSocketId?: string,
  ): Promise<{ position: number; count: number; result: R }> {
    return this.log.append(addr.stream, prepare, (first, entries, result) => {
      record.append(addr.topic, entries.length);
      entries.forEach((entry, i) => {
        for (const [event, payload] of this.#events(first + i, entry)) {
          this.#hub.publish(addr.topic, event, payload, excludeSocketId);
        }
      });
      after?.(first, entries, result);
    });
  }

  /**
   * Deletes the stream (with `apply` writes in the same transaction) and starts a new epoch;
   * subscribers then get `event` with `{ ...payload, epoch }`. Resolves with the new epoch.
   */
  purge(
    addr: StreamAddress,
    event: string,
    payload: Record<string, unknown>,
    apply?: () => void,
  ): Promise<string> {
    return this.log.purge(addr.stream, apply, (epoch) => {
      this.#hub.publish(addr.topic, event, { ...payload, epoch });
    });
  }

  /** The join sequence on this stream: replay, snapshot reply, live (see `joinStream`). */
  join<S>(ctx: JoinContext, addr: StreamAddress, spec: ProductJoin<E, S>): Promise<boolean> {
    return joinStream<E, S>(ctx, {
      ...spec,
      log: this.log,
      stream: addr.stream,
      events: (rec: LogRecord<E>) => this.#events(rec.position, rec.entry),
    });
  }
}
