import assert from "node:assert/strict";
import { Hub, type Subscriber } from "../../lib/hub/hub.ts";
import { Occupancy } from "../../lib/hub/occupancy.ts";
import { ownerOf } from "../../lib/cluster/nodes.ts";
import { Topic } from "../../lib/wire/topic.ts";

const sub = (socketId: string): Subscriber => ({ socketId, format: "json", sendEncoded() {} });

Deno.test("Occupancy: counts, listings and occupied/vacated across this node and others", () => {
  const hub = new Hub();
  const occ = new Occupancy(hub, "pubsub");
  const seen: [string, boolean][] = [];
  const local: [string, number][] = [];
  occ.observe((t, o) => seen.push([t.key, o]));
  occ.observeLocal((t, c) => local.push([t.key, c]));
  const [a, b] = [sub("a"), sub("b")];
  // Values made apart (a socket's join, another node's report) name the same topic.
  const one = () => Topic.parse("pubsub:k:one")!;
  const two = () => Topic.of("pubsub", "k", "two");

  hub.subscribe(Topic.of("chat", "k", "x"), a); // another product: not counted
  hub.subscribe(one(), a);
  hub.subscribe(one(), b);
  assert.deepEqual(local, [["pubsub:k:one", 1], ["pubsub:k:one", 2]]);
  occ.setRemote("n2", one(), 3);
  occ.setRemote("n2", two(), 1);
  occ.setRemote("n3", two(), 2);
  occ.setRemote("n3", Topic.of("pubsub", "other", "three"), 1);
  assert.equal(occ.count(one()), 5);
  assert.equal(occ.count(two()), 3);
  assert.deepEqual(occ.topics("k").sort(Topic.order).map((t) => t.key), [
    "pubsub:k:one",
    "pubsub:k:two",
  ]);
  assert.deepEqual(occ.topics("k", "tw").map((t) => t.key), ["pubsub:k:two"]);
  assert.equal(occ.topics().length, 3);
  assert.deepEqual(seen, [["pubsub:k:one", true], ["pubsub:k:two", true], [
    "pubsub:other:three",
    true,
  ]]);

  // Local leaves while another node still holds the channel: no vacated.
  hub.unsubscribe(one(), a);
  hub.unsubscribe(one(), b);
  assert.deepEqual(seen.length, 3);
  // A full state from n2 without "one": vacated; n3 gone: "two" still held by n2, "three" vacated.
  occ.replaceRemote("n2", [[two(), 1]]);
  assert.deepEqual(seen.slice(3), [["pubsub:k:one", false]]);
  occ.forget("n3");
  assert.equal(occ.count(two()), 1);
  assert.deepEqual(seen.slice(4), [["pubsub:other:three", false]]);
  occ.forget("n2");
  assert.deepEqual(seen.slice(5), [["pubsub:k:two", false]]);
  assert.deepEqual(occ.topics(), []);
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
  for (const n of nodes) {
    assert.ok((owners.get(n) ?? 0) > 800, `${n} owns ${owners.get(n)} of 3000`);
  }
  assert.equal(ownerOf("t", []), undefined);
});
