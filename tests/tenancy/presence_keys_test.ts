// Shared presence (lib/cluster/presence.ts): a node's heartbeat names every member it holds; the
// others drop the members of that node it no longer names. The check keyed (topic, user) as
// `topic\nuser`, so a stale member whose topic and user split a newline differently from a
// live one (`pubsub:k:x\ny` + `z` against `pubsub:k:x` + `y\nz`) was kept. keyOf keeps the two
// tuples apart, and the stale member goes.
import assert from "node:assert/strict";
import { Packr } from "msgpackr";
import { startPresence } from "../../lib/cluster/presence.ts";
import type { ClusterLink } from "../../lib/cluster/link.ts";
import type { NodeWatch } from "../../lib/cluster/nodes.ts";
import { PresenceRegistry } from "../../lib/pubsub/presence.ts";
import { Topic } from "../../lib/wire/topic.ts";

const codec = new Packr({ useRecords: false });

Deno.test("presence heartbeat: a stale member is dropped even when a plain join would match a live one", () => {
  const registry = new PresenceRegistry("me");
  let deliver: ((data: Uint8Array) => void) | undefined;
  const link = {
    nodeId: "me",
    publish: () => {},
    subscribe: (_subject: string, fn: (data: Uint8Array) => void) => {
      deliver = fn;
      return () => {};
    },
  } as unknown as ClusterLink;
  const nodes = { onGone: () => {}, heard: () => {} } as unknown as NodeWatch;
  const stop = startPresence(link, { name: "channels", registry }, nodes, 3_600_000);
  try {
    const stale = Topic.parse("pubsub:k:x\ny")!;
    const live = Topic.parse("pubsub:k:x")!;
    const send = (m: unknown) => deliver!(codec.pack(m));
    send({ n: "other", k: "add", t: stale.key, u: "z", i: null });
    send({ n: "other", k: "add", t: live.key, u: "y\nz", i: null });
    assert.equal(registry.count(stale), 1);
    assert.equal(registry.count(live), 1);
    // The other node's heartbeat names only the live member.
    send({ n: "other", k: "full", m: [[live.key, "y\nz", null]] });
    assert.equal(registry.count(stale), 0);
    assert.equal(registry.count(live), 1);
  } finally {
    stop();
  }
});
