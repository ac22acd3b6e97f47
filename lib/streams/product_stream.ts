/**
 * One product's face of the stream layer: binds a `StreamLog` to the hub, so appends are
 * published in position order after commit, joins follow the one sequence of `joinStream`,
 * and purges start a new epoch that subscribers are told about. Products pass addresses (see
 * `names.ts`) and their own entry -> event mapping; they never publish log entries themselves.
 */
import type { Hub } from "../hub/hub.ts";
import type { JoinContext } from "../socket/handler.ts";
import type { Appended, LogRecord, Prepared, StreamLog } from "./stream_log.ts";
import { joinStream, type StreamJoinSpec } from "./join.ts";
import { record } from "../metrics/mod.ts";
import { tapActive } from "../debug/tap.ts";
import type { StreamAddress, Topic } from "./names.ts";
import { type PositionWire, readPosition, type StreamPosition } from "./position.ts";

/** Maps one stored entry at `position` to the wire events it is delivered (and replayed) as. */
export type EventsOf<E> = (position: number, entry: E) => [string, unknown][];

/** The socket that does not get `entry` live, if any (kept in the entry so that other nodes of
 * a cluster, which apply it from the log, exclude that socket too). */
export type ExcludedBy<E> = (entry: E) => string | undefined;

/** The join options a product gives; log, stream and the event mapping come from the stream. */
export type ProductJoin<E, S> = Omit<StreamJoinSpec<E, S>, "log" | "stream" | "events" | "wire">;

/** See the module comment. */
export class ProductStream<E> {
  readonly log: StreamLog;
  /** The product's position names on the wire. */
  readonly wire: PositionWire;
  #hub: Hub;
  #events: EventsOf<E>;
  #excludedBy: ExcludedBy<E>;
  /** Topics of the streams joined on this node, for other nodes' writes (clustered mode):
   * kept while the topic has subscribers or a join is under way. */
  #joined = new Map<string, { topic: Topic; joining: number }>();
  #purgeNotice: (topic: Topic) => [string, Record<string, unknown>] = () => ["purge", {}];

  constructor(
    log: StreamLog,
    hub: Hub,
    wire: PositionWire,
    events: EventsOf<E>,
    excludedBy: ExcludedBy<E> = () => undefined,
  ) {
    this.log = log;
    this.wire = wire;
    this.#hub = hub;
    this.#events = events;
    this.#excludedBy = excludedBy;
    log.follow({
      appended: (stream, first, entries) => {
        const topic = this.#liveTopic(stream);
        if (topic) this.#broadcast(topic, first, entries as E[]);
      },
      purged: (stream, epoch) => {
        const topic = this.#liveTopic(stream);
        if (topic) this.#purged(topic, epoch);
      },
    });
  }

  /** Declares the event (and payload) subscribers of `topic` get when its stream is
   * purged, here or on another node; `{ epoch }` is added to the payload. */
  purgeNotice(notice: (topic: Topic) => [string, Record<string, unknown>]): void {
    this.#purgeNotice = notice;
  }

  /** Tells the subscribers of `topic` that its stream was purged into `epoch` (see
   * `purgeNotice`): the one path for purges made here and on other nodes. */
  #purged(topic: Topic, epoch: string): void {
    const [event, payload] = this.#purgeNotice(topic);
    this.#hub.publish(topic, event, { ...payload, epoch });
  }

  /**
   * Appends atomically (see `StreamLog.append`), then broadcasts every entry's events on the
   * address's topic in position order; `after` runs once the batch is broadcast (webhooks).
   * An entry's excluded socket (see `ExcludedBy`: Pusher's `socket_id`) does not get it live;
   * it still gets it on replay. `settle`: see `StreamLog.append`.
   */
  append<R, T = Appended<R>>(
    addr: StreamAddress,
    prepare: (head: number) => Prepared<E, R>,
    after?: (first: number, entries: E[], result: R) => void,
    settle?: (position: number, count: number, result: R) => T,
  ): Promise<T> {
    const topic = addr.topic;
    return this.log.append(
      addr.stream,
      prepare,
      after
        ? (first, entries, result) => {
          this.#broadcast(topic, first, entries);
          after(first, entries, result);
        }
        : (first, entries) => this.#broadcast(topic, first, entries),
      settle,
    );
  }

  /** Delivers appended entries to the subscribers of `topic`: the one path for entries
   * appended here and on other nodes. */
  #broadcast(topic: Topic, first: number, entries: E[]): void {
    record.append(topic.product, entries.length);
    // No subscriber and no console watching: nothing would receive the events, so they are
    // not built (most durable writes).
    if (!tapActive && this.#hub.count(topic) === 0) return;
    entries.forEach((entry, i) => {
      const exclude = this.#excludedBy(entry);
      for (const [event, payload] of this.#events(first + i, entry)) {
        this.#hub.publish(topic, event, payload, exclude);
      }
    });
  }

  /** The topic of `stream` while it has subscribers here (joins register it). */
  #liveTopic(stream: string): Topic | undefined {
    const seen = this.#joined.get(stream);
    if (!seen) return undefined;
    if (seen.joining === 0 && this.#hub.count(seen.topic) === 0) {
      this.#joined.delete(stream);
      return undefined;
    }
    return seen.topic;
  }

  /**
   * Deletes the stream (with `apply` writes in the same transaction) and starts a new epoch;
   * subscribers then get the purge notice (see `purgeNotice`). Resolves with the new epoch.
   */
  purge(addr: StreamAddress, apply?: () => void): Promise<string> {
    return this.log.purge(addr.stream, apply, (epoch) => this.#purged(addr.topic, epoch));
  }

  /** The client's position in this product's join params, or the refusal reason (see
   * `readPosition`). */
  position(params: Record<string, unknown>): StreamPosition | undefined | { error: string } {
    return readPosition(this.wire, params);
  }

  /** The join sequence on this stream: replay, snapshot reply, live (see `joinStream`). */
  async join<S>(ctx: JoinContext, addr: StreamAddress, spec: ProductJoin<E, S>): Promise<boolean> {
    let seen = this.#joined.get(addr.stream);
    if (!seen) this.#joined.set(addr.stream, seen = { topic: addr.topic, joining: 0 });
    seen.joining++;
    try {
      return await joinStream<E, S>(ctx, {
        ...spec,
        wire: this.wire,
        log: this.log,
        stream: addr.stream,
        events: (rec: LogRecord<E>) => this.#events(rec.position, rec.entry),
      });
    } finally {
      seen.joining--;
    }
  }
}
