/**
 * Subscriptions per topic (of topics under one prefix) across the nodes of a cluster: this
 * node's come from the hub, the others' as they report them (`lib/cluster/occupancy.ts`). One
 * node alone is exactly its hub. Channel listings, `subscription_count` and the occupied /
 * vacated webhooks read this view, so they describe the channel, not one node.
 */
import type { Hub } from "./hub.ts";
import { Topic } from "../wire/topic.ts";

/** Told when a topic's first subscription anywhere starts (`true`) or its last ends (with
 * the topic parsed). */
export type OccupancyObserver = (topic: Topic, occupied: boolean) => void;

/** See the module comment. */
export class Occupancy {
  readonly prefix: string;
  #hub: Hub;
  /** node -> topic -> subscriptions there. */
  #remote = new Map<string, Map<string, number>>();
  /** topic -> subscriptions on all other nodes. */
  #remoteTotal = new Map<string, number>();
  #observers: OccupancyObserver[] = [];
  #local: ((topic: string, count: number) => void)[] = [];

  /** Follows `hub`'s subscriptions on topics starting with `prefix`. */
  constructor(hub: Hub, prefix: string) {
    this.#hub = hub;
    this.prefix = prefix;
    hub.onSubscriptions((topic, count, delta) => {
      if (!topic.startsWith(prefix)) return;
      for (const fn of this.#local) fn(topic, count);
      const others = this.#remoteTotal.get(topic) ?? 0;
      if (others === 0 && count === (delta > 0 ? 1 : 0)) this.#tell(topic, delta > 0);
    });
  }

  /** Calls `fn` when a topic becomes occupied on some node (`true`) or vacant on all. */
  observe(fn: OccupancyObserver): void {
    this.#observers.push(fn);
  }

  /** Calls `fn` with this node's new count whenever a local subscription starts or ends. */
  observeLocal(fn: (topic: string, count: number) => void): void {
    this.#local.push(fn);
  }

  /** Subscriptions on `topic`, all nodes together. */
  count(topic: string): number {
    return this.#hub.count(topic) + (this.#remoteTotal.get(topic) ?? 0);
  }

  /** Occupied topics starting with `prefix` (which starts with this view's prefix). */
  topics(prefix: string): string[] {
    const out = new Set(this.#hub.topics(prefix));
    for (const t of this.#remoteTotal.keys()) if (t.startsWith(prefix)) out.add(t);
    return [...out];
  }

  /** This node's subscriptions: `[topic, count]`. */
  localCounts(): [string, number][] {
    return this.#hub.topics(this.prefix).map((t) => [t, this.#hub.count(t)]);
  }

  /** `node` now has `count` subscriptions on `topic` (0: none). */
  setRemote(node: string, topic: string, count: number): void {
    let counts = this.#remote.get(node);
    const before = counts?.get(topic) ?? 0;
    if (before === count) return;
    if (!counts) this.#remote.set(node, (counts = new Map()));
    if (count === 0) counts.delete(topic);
    else counts.set(topic, count);
    if (counts.size === 0) this.#remote.delete(node);
    const wasTotal = this.count(topic);
    const others = (this.#remoteTotal.get(topic) ?? 0) + count - before;
    if (others === 0) this.#remoteTotal.delete(topic);
    else this.#remoteTotal.set(topic, others);
    const total = this.count(topic);
    if ((wasTotal === 0) !== (total === 0)) this.#tell(topic, total > 0);
  }

  /** Replaces everything `node` reported with `counts` (its whole state). */
  replaceRemote(node: string, counts: [string, number][]): void {
    const now = new Map(counts);
    for (const topic of [...(this.#remote.get(node)?.keys() ?? [])]) {
      if (!now.has(topic)) this.setRemote(node, topic, 0);
    }
    for (const [topic, count] of now) this.setRemote(node, topic, count);
  }

  /** `node` is gone: its subscriptions end. */
  forget(node: string): void {
    this.replaceRemote(node, []);
  }

  #tell(topic: string, occupied: boolean): void {
    const parsed = this.#observers.length > 0 ? Topic.parse(topic) : null;
    if (parsed) for (const fn of this.#observers) fn(parsed, occupied);
  }
}
