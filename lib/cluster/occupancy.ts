/**
 * Channel occupancy across nodes: each node tells the others on core NATS
 * (`sb.occupancy.{prefix}`) its subscription count of each topic that changed (collected for
 * `FLUSH_MS`), plus its whole state every heartbeat; a node that is gone has its subscriptions
 * removed. Every node thus holds the cluster-wide `Occupancy` view. Topics travel as their
 * strings and are parsed here, where they arrive.
 */
import { Packr } from "msgpackr";
import type { Occupancy } from "../hub/occupancy.ts";
import { Topic } from "../wire/topic.ts";
import type { ClusterLink } from "./link.ts";
import type { NodeWatch } from "./nodes.ts";

const codec = new Packr({ useRecords: false });
/** Local changes are collected this long before they are sent. */
const FLUSH_MS = 20;

type Message =
  | { n: string; k: "counts" | "full"; c: [string, number][] }
  | { n: string; k: "hello" };

/** Starts sharing `occupancy` with the other nodes; returns the stop function (which sends
 * what changed last). */
export function startOccupancy(
  link: ClusterLink,
  occupancy: Occupancy,
  nodes: NodeWatch,
  heartbeatMs: number,
): () => void {
  const subject = `sb.occupancy.${occupancy.product.replace(/[^A-Za-z0-9_-]/g, "")}`;
  const me = link.nodeId;
  const send = (m: Message) => link.publish(subject, codec.pack(m));
  const full = () =>
    send({ n: me, k: "full", c: occupancy.localCounts().map(([t, count]) => [t.key, count]) });
  /** The reported counts whose topic parses. */
  const parsed = (c: [string, number][]) =>
    c.flatMap(([t, count]): [Topic, number][] => {
      const topic = Topic.parse(t);
      return topic ? [[topic, count]] : [];
    });
  const changed = new Map<string, number>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (changed.size > 0) send({ n: me, k: "counts", c: [...changed] });
    changed.clear();
  };
  occupancy.observeLocal((topic, count) => {
    changed.set(topic.key, count);
    timer ??= setTimeout(flush, FLUSH_MS);
  });
  nodes.onGone((node) => occupancy.forget(node));
  const unsubscribe = link.subscribe(subject, (data) => {
    const m = codec.unpack(data) as Message;
    if (m.n === me) return;
    nodes.heard(m.n);
    if (m.k === "hello") return full();
    if (m.k === "full") return occupancy.replaceRemote(m.n, parsed(m.c));
    for (const [topic, count] of parsed(m.c)) occupancy.setRemote(m.n, topic, count);
  });
  const beat = setInterval(full, heartbeatMs);
  send({ n: me, k: "hello" });
  return () => {
    clearInterval(beat);
    flush();
    unsubscribe();
  };
}
