/**
 * Relays the events kept in no log (`Hub.publish` with reach `"cluster"`: ephemeral channels,
 * token roll-ups, events to a user) between nodes on core NATS: at most once, like on one node.
 * A topic travels as its string and is parsed once, here, where it arrives.
 */
import { Packr } from "msgpackr";
import type { Hub } from "../hub/hub.ts";
import type { ClusterLink } from "./link.ts";
import { Topic } from "../wire/topic.ts";

const SUBJECT = "sb.bus";
const codec = new Packr({ useRecords: false });

/** Connects `hub` to the other nodes; returns the stop function. */
export function startBus(link: ClusterLink, hub: Hub): () => void {
  hub.useRelay((t, e, p, x) =>
    link.publish(SUBJECT, codec.pack({ n: link.nodeId, t: t.key, e, p, x }))
  );
  return link.subscribe(SUBJECT, (data) => {
    const m = codec.unpack(data) as { n: string; t: string; e: string; p: unknown; x?: string };
    if (m.n === link.nodeId) return;
    const topic = Topic.parse(m.t);
    if (topic) hub.relayed(topic, m.e, m.p, m.x ?? undefined);
  });
}
