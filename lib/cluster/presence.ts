/**
 * Presence across nodes (the Phoenix.Tracker model): each node keeps its own members and tells
 * the others on core NATS when a user's presence through it starts or ends, plus its whole
 * local state every heartbeat. A node that is gone (`NodeWatch`: crashed, cut off, stopped) has
 * its users removed. A user on several nodes is one member everywhere. This module only
 * translates: a message becomes the registry's `add` / `remove` naming the node it came from
 * (the product tells its subscribers, as for a change through this node); topics travel as
 * their strings and are parsed here, where they arrive.
 */
import { Packr } from "msgpackr";
import type { SharedPresence } from "../product.ts";
import { Topic } from "../wire/topic.ts";
import type { ClusterLink } from "./link.ts";
import type { NodeWatch } from "./nodes.ts";
import { keyOf } from "../wire/key.ts";

const codec = new Packr({ useRecords: false });

type Message =
  | { n: string; k: "add"; t: string; u: string; i: unknown }
  | { n: string; k: "remove"; t: string; u: string }
  | { n: string; k: "full"; m: [string, string, unknown][] }
  | { n: string; k: "hello" };

/** Starts sharing `shared.registry` with the other nodes on `sb.presence.{name}`, sending the
 * whole local state every `heartbeatMs`; returns the stop function. */
export function startPresence(
  link: ClusterLink,
  shared: SharedPresence,
  nodes: NodeWatch,
  heartbeatMs: number,
): () => void {
  const SUBJECT = `sb.presence.${shared.name}`;
  const registry = shared.registry;
  const me = link.nodeId;
  const send = (m: Message) => link.publish(SUBJECT, codec.pack(m));
  const local = (): [string, string, unknown][] =>
    registry.membersVia(registry.node).map(([t, u, i]) => [t.key, u, i]);
  nodes.onGone((node) => {
    for (const [t, u] of registry.membersVia(node)) registry.remove(t, u, node);
  });

  registry.observeLocal((t, u, i, present) =>
    send(present ? { n: me, k: "add", t: t.key, u, i } : { n: me, k: "remove", t: t.key, u })
  );
  const unsubscribe = link.subscribe(SUBJECT, (data) => {
    const m = codec.unpack(data) as Message;
    if (m.n === me) return;
    nodes.heard(m.n);
    switch (m.k) {
      case "add": {
        const topic = Topic.parse(m.t);
        if (topic) registry.add(topic, m.u, m.i, m.n);
        return;
      }
      case "remove": {
        const topic = Topic.parse(m.t);
        if (topic) registry.remove(topic, m.u, m.n);
        return;
      }
      case "hello":
        return send({ n: me, k: "full", m: local() });
      case "full": {
        const now = new Set(m.m.map(([t, u]) => keyOf(t, u)));
        for (const [t, u] of registry.membersVia(m.n)) {
          if (!now.has(keyOf(t.key, u))) registry.remove(t, u, m.n);
        }
        for (const [t, u, i] of m.m) {
          const topic = Topic.parse(t);
          if (topic) registry.add(topic, u, i, m.n);
        }
      }
    }
  });
  const beat = setInterval(() => send({ n: me, k: "full", m: local() }), heartbeatMs);
  send({ n: me, k: "hello" });
  return () => {
    clearInterval(beat);
    unsubscribe();
  };
}
