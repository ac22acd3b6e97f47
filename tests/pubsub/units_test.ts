import assert from "node:assert/strict";
import { channelKind, eventNameProblem, validChannelName } from "../../lib/pubsub/names.ts";
import { PresenceRegistry } from "../../lib/pubsub/presence.ts";
import { RateLimiter } from "../../lib/pubsub/rate_limit.ts";
import { Topic } from "../../lib/wire/topic.ts";

Deno.test("channelKind() picks the kind by prefix", () => {
  assert.equal(channelKind("news"), "public");
  assert.equal(channelKind("private-a"), "private");
  assert.equal(channelKind("presence-a"), "presence");
  assert.equal(channelKind("ephemeral-a"), "ephemeral");
});

Deno.test("validChannelName() accepts the documented charset up to 164 chars", () => {
  assert.ok(validChannelName("a-b_c=d@e,f.g;h:i"));
  assert.ok(validChannelName("x".repeat(164)));
  for (const bad of ["", "x".repeat(165), "a b", "a/b", "a*", 7]) {
    assert.ok(!validChannelName(bad), String(bad));
  }
});

Deno.test("eventNameProblem() refuses empty, long and reserved names", () => {
  assert.equal(eventNameProblem("client-x"), null);
  assert.ok(eventNameProblem(""));
  assert.ok(eventNameProblem("e".repeat(201)));
  assert.ok(eventNameProblem("phx_join"));
  assert.ok(eventNameProblem("presence:leave"));
});

Deno.test("RateLimiter.take() refuses over the limit within one second, without taking", () => {
  const l = new RateLimiter();
  let ok = 0;
  for (let i = 0; i < 10; i++) if (l.take("a", 3)) ok++;
  assert.ok(ok >= 3 && ok <= 6);
  assert.ok(l.take("b", 0, 1000), "0 means unlimited");
  assert.ok(!l.take("c", 2, 3), "a batch larger than the limit is refused whole");
});

Deno.test("PresenceRegistry counts a user once across sockets", () => {
  const p = new PresenceRegistry("me");
  const t = Topic.of("pubsub", "k", "presence-x");
  assert.equal(p.add(t, "u", { n: 1 }, "me", "s1"), true);
  assert.equal(p.add(Topic.parse(t.key)!, "u", { n: 1 }, "me", "s2"), false);
  assert.equal(p.count(t), 1);
  assert.equal(p.remove(t, "u", "me", "s1"), false);
  assert.equal(p.remove(t, "u", "me", "s1"), false, "unknown socket");
  assert.equal(p.remove(t, "u", "me", "s2"), true);
  assert.deepEqual(p.members(t), []);
});

Deno.test("PresenceRegistry: a presence through another node is added and removed like one through this node", () => {
  const p = new PresenceRegistry("me");
  const t = Topic.of("pubsub", "k", "presence-x");
  const members: [string, boolean, unknown][] = [];
  const local: [string, boolean][] = [];
  p.observe((topic, user, joined, info) => members.push([`${topic.key} ${user}`, joined, info]));
  p.observeLocal((topic, user, _info, present) => local.push([`${topic.key} ${user}`, present]));
  // u joins through node n2 first, then through a socket here: one member, one join.
  assert.equal(p.add(t, "u", { n: 1 }, "n2"), true);
  assert.equal(p.add(t, "u", { n: 1 }, "n2"), false, "a heartbeat repeats it");
  assert.equal(p.add(t, "u", { n: 1 }, "me", "s1"), false);
  assert.deepEqual(members, [["pubsub:k:presence-x u", true, { n: 1 }]]);
  assert.deepEqual(
    local,
    [["pubsub:k:presence-x u", true]],
    "only this node's presence is told to the cluster",
  );
  assert.deepEqual(p.membersVia("n2").map(([tt, u, i]) => [tt.key, u, i]), [[
    "pubsub:k:presence-x",
    "u",
    { n: 1 },
  ]]);
  assert.deepEqual(p.membersVia("me").map(([tt, u]) => [tt.key, u]), [[
    "pubsub:k:presence-x",
    "u",
  ]]);
  // n2 lets go: still a member through here; then the last socket leaves: one leave, with its info.
  assert.equal(p.remove(t, "u", "n2"), false);
  assert.equal(p.remove(t, "u", "n2"), false, "already gone through n2");
  assert.equal(p.remove(t, "u", "me", "s1"), true);
  assert.deepEqual(members.slice(1), [["pubsub:k:presence-x u", false, { n: 1 }]]);
  assert.deepEqual(local.slice(1), [["pubsub:k:presence-x u", false]]);
  assert.equal(p.count(t), 0);
  assert.deepEqual(p.membersVia("n2"), []);
});
