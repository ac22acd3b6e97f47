import assert from "node:assert/strict";
import { Hub, type Subscriber } from "../../lib/hub/hub.ts";
import { Occupancy } from "../../lib/hub/occupancy.ts";
import { ownerOf } from "../../lib/cluster/nodes.ts";
import { Topic } from "../../lib/wire/topic.ts";

const sub = (socketId: string): Subscriber => ({ socketId, format: "json", sendEncoded() {} });

Deno.test("Occupancy: counts, listings and occupied/vacated across this node and others", () => {
  const hub = new Hub();
  const occ = new Occupancy(hub, "pubsub:");
  const seen: [string, boolean][] = [];
  const local: [string, number][] = [];
  occ.observe((t, o) => seen.push([Topic.format(t), o])); // observers get the topic parsed
  occ.observeLocal((t, c) => local.push([t, c]));
  const [a, b] = [sub("a"), sub("b")];

  hub.subscribe("chat:k:x", a); // another prefix: not counted
  hub.subscribe("pubsub:k:one", a);
  hub.subscribe("pubsub:k:one", b);
  assert.deepEqual(local, [["pubsub:k:one", 1], ["pubsub:k:one", 2]]);
  occ.setRemote("n2", "pubsub:k:one", 3);
  occ.setRemote("n2", "pubsub:k:two", 1);
  occ.setRemote("n3", "pubsub:k:two", 2);
  assert.equal(occ.count("pubsub:k:one"), 5);
  assert.equal(occ.count("pubsub:k:two"), 3);
  assert.deepEqual(occ.topics("pubsub:k:").sort(), ["pubsub:k:one", "pubsub:k:two"]);
  assert.deepEqual(seen, [["pubsub:k:one", true], ["pubsub:k:two", true]]);

  // Local leaves while another node still holds the channel: no vacated.
  hub.unsubscribe("pubsub:k:one", a);
  hub.unsubscribe("pubsub:k:one", b);
  assert.deepEqual(seen.length, 2);
  // A full state from n2 without "one": vacated; n3 gone: "two" vacated.
  occ.replaceRemote("n2", [["pubsub:k:two", 1]]);
  assert.deepEqual(seen.slice(2), [["pubsub:k:one", false]]);
  occ.forget("n3");
  assert.equal(occ.count("pubsub:k:two"), 1);
  occ.forget("n2");
  assert.deepEqual(seen.slice(3), [["pubsub:k:two", false]]);
  assert.deepEqual(occ.topics("pubsub:"), []);
  assert.deepEqual(occ.localCounts(), []);
});

Deno.test("ownerOf: one owner per topic, the same whatever the order of nodes, spread over nodes", () => {
  const nodes = ["node-1", "node-2", "node-3"];
  const owners = new Map<string, number>();
  for (let i = 0; i < 3000; i++) {
    const topic = `pubsub:k:ch-${i}`;
    const owner = ownerOf(topic, nodes)!;
    assert.equal(ownerOf(topic, [...nodes].reverse()), owner);
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
    // Removing a node that does not own the topic keeps its owner.
    const other = nodes.find((n) => n !== owner)!;
    assert.equal(ownerOf(topic, nodes.filter((n) => n !== other)), owner);
  }
  for (const n of nodes) assert.ok((owners.get(n) ?? 0) > 800, `${n} owns ${owners.get(n)} of 3000`);
  assert.equal(ownerOf("t", []), undefined);
});
