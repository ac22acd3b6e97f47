/**
 * Presence across nodes (the Phoenix.Tracker model): each node keeps its own members and tells
 * the others on core NATS when a user's presence on it starts or ends, plus its whole local
 * state every heartbeat. A node that is gone (`NodeWatch`: crashed, cut off, stopped) has its
 * users removed. A user on several nodes is one member everywhere.
 */
import { Packr } from "msgpackr";
import type { Hub } from "../hub/hub.ts";
import type { SharedPresence } from "../product.ts";
import type { ClusterLink } from "./link.ts";
import type { NodeWatch } from "./nodes.ts";

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
  hub: Hub,
  nodes: NodeWatch,
  heartbeatMs: number,
): () => void {
  const SUBJECT = `sb.presence.${shared.name}`;
  const registry = shared.registry;
  const me = link.nodeId;
  const send = (m: Message) => link.publish(SUBJECT, codec.pack(m));
  const add = (node: string, topic: string, userId: string, info: unknown) => {
    if (registry.addRemote(topic, userId, info, node)) hub.publish(topic, ...shared.joined(userId, info));
  };
  const remove = (node: string, topic: string, userId: string) => {
    const info = registry.info(topic, userId);
    if (registry.removeRemote(topic, userId, node)) hub.publish(topic, ...shared.left(userId, info));
  };
  nodes.onGone((node) => {
    for (const [t, u] of registry.remoteMembers(node)) remove(node, t, u);
  });

  registry.observeLocal((t, u, i, present) => send(present ? { n: me, k: "add", t, u, i } : { n: me, k: "remove", t, u }));
  const unsubscribe = link.subscribe(SUBJECT, (data) => {
    const m = codec.unpack(data) as Message;
    if (m.n === me) return;
    nodes.heard(m.n);
    switch (m.k) {
      case "add":
        return add(m.n, m.t, m.u, m.i);
      case "remove":
        return remove(m.n, m.t, m.u);
      case "hello":
        return send({ n: me, k: "full", m: registry.localMembers() });
      case "full": {
        const now = new Set(m.m.map(([t, u]) => `${t}\n${u}`));
        for (const [t, u] of registry.remoteMembers(m.n)) if (!now.has(`${t}\n${u}`)) remove(m.n, t, u);
        for (const [t, u, i] of m.m) add(m.n, t, u, i);
      }
    }
  });
  const beat = setInterval(() => send({ n: me, k: "full", m: registry.localMembers() }), heartbeatMs);
  send({ n: me, k: "hello" });
  return () => {
    clearInterval(beat);
    unsubscribe();
  };
}
