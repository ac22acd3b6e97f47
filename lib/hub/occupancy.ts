/**
 * Subscriptions per topic (of one product's topics) across the nodes of a cluster: this node's
 * come from the hub, the others' as they report them (`lib/cluster/occupancy.ts`). One node
 * alone is exactly its hub. Channel listings, `subscription_count` and the occupied / vacated
 * webhooks read this view, so they describe the channel, not one node.
 */
import type { Hub } from "./hub.ts";
import type { Topic } from "../wire/topic.ts";

/** Told when a topic's first subscription anywhere starts (`true`) or its last ends. */
export type OccupancyObserver = (topic: Topic, occupied: boolean) => void;

/** See the module comment. */
export class Occupancy {
  /** The product whose topics this view follows. */
  readonly product: string;
  #hub: Hub;
  /** node -> topic key -> subscriptions there. */
  #remote = new Map<string, Map<string, number>>();
  /** topic key -> the topic and its subscriptions on all other nodes. */
  #remoteTotal = new Map<string, { topic: Topic; count: number }>();
  #observers: OccupancyObserver[] = [];
  #local: ((topic: Topic, count: number) => void)[] = [];

  /** Follows `hub`'s subscriptions on topics of `product`. */
  constructor(hub: Hub, product: string) {
    this.#hub = hub;
    this.product = product;
    hub.onSubscriptions((topic, count, delta) => {
      if (topic.product !== product) return;
      for (const fn of this.#local) fn(topic, count);
      const others = this.#remoteTotal.get(topic.key)?.count ?? 0;
      if (others === 0 && count === (delta > 0 ? 1 : 0)) this.#tell(topic, delta > 0);
    });
  }

  /** Calls `fn` when a topic becomes occupied on some node (`true`) or vacant on all. */
  observe(fn: OccupancyObserver): void {
    this.#observers.push(fn);
  }

  /** Calls `fn` with this node's new count whenever a local subscription starts or ends. */
  observeLocal(fn: (topic: Topic, count: number) => void): void {
    this.#local.push(fn);
  }

  /** Subscriptions on `topic`, all nodes together. */
  count(topic: Topic): number {
    return this.#hub.count(topic) + (this.#remoteTotal.get(topic.key)?.count ?? 0);
  }

  /** Occupied topics, those of `appKey` when given, whose name starts with `namePrefix`. */
  topics(appKey?: string, namePrefix = ""): Topic[] {
    const out = new Map<string, Topic>();
    for (const t of this.#hub.topics(this.product, appKey)) {
      if (t.name.startsWith(namePrefix)) out.set(t.key, t);
    }
    for (const { topic: t } of this.#remoteTotal.values()) {
      if ((appKey === undefined || t.appKey === appKey) && t.name.startsWith(namePrefix)) {
        out.set(t.key, t);
      }
    }
    return [...out.values()];
  }

  /** This node's subscriptions: `[topic, count]`. */
  localCounts(): [Topic, number][] {
    return this.#hub.topics(this.product).map((t) => [t, this.#hub.count(t)]);
  }

  /** `node` now has `count` subscriptions on `topic` (0: none). */
  setRemote(node: string, topic: Topic, count: number): void {
    let counts = this.#remote.get(node);
    const before = counts?.get(topic.key) ?? 0;
    if (before === count) return;
    if (!counts) this.#remote.set(node, counts = new Map());
    if (count === 0) counts.delete(topic.key);
    else counts.set(topic.key, count);
    if (counts.size === 0) this.#remote.delete(node);
    const wasTotal = this.count(topic);
    const known = this.#remoteTotal.get(topic.key);
    const others = (known?.count ?? 0) + count - before;
    if (others === 0) this.#remoteTotal.delete(topic.key);
    else if (known) known.count = others;
    else this.#remoteTotal.set(topic.key, { topic, count: others });
    const total = this.count(topic);
    if ((wasTotal === 0) !== (total === 0)) this.#tell(topic, total > 0);
  }

  /** Replaces everything `node` reported with `counts` (its whole state). */
  replaceRemote(node: string, counts: [Topic, number][]): void {
    const now = new Map(counts.map(([t, n]) => [t.key, n]));
    for (const key of [...(this.#remote.get(node)?.keys() ?? [])]) {
      const known = this.#remoteTotal.get(key);
      if (!now.has(key) && known) this.setRemote(node, known.topic, 0);
    }
    for (const [topic, count] of counts) this.setRemote(node, topic, count);
  }

  /** `node` is gone: its subscriptions end. */
  forget(node: string): void {
    this.replaceRemote(node, []);
  }

  #tell(topic: Topic, occupied: boolean): void {
    for (const fn of this.#observers) fn(topic, occupied);
  }
}
