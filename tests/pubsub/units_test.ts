import assert from "node:assert/strict";
import { channelKind, eventNameProblem, validChannelName } from "../../lib/pubsub/names.ts";
import { PresenceRegistry } from "../../lib/pubsub/presence.ts";
import { RateLimiter } from "../../lib/pubsub/rate_limit.ts";

Deno.test("channelKind() picks the kind by prefix", () => {
  assert.equal(channelKind("news"), "public");
  assert.equal(channelKind("private-a"), "private");
  assert.equal(channelKind("presence-a"), "presence");
  assert.equal(channelKind("ephemeral-a"), "ephemeral");
});

Deno.test("validChannelName() accepts the documented charset up to 164 chars", () => {
  assert.ok(validChannelName("a-b_c=d@e,f.g;h:i"));
  assert.ok(validChannelName("x".repeat(164)));
  for (const bad of ["", "x".repeat(165), "a b", "a/b", "a*", 7]) assert.ok(!validChannelName(bad), String(bad));
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
  const p = new PresenceRegistry();
  assert.equal(p.add("t", "u", { n: 1 }, "s1"), true);
  assert.equal(p.add("t", "u", { n: 1 }, "s2"), false);
  assert.equal(p.count("t"), 1);
  assert.equal(p.remove("t", "u", "s1"), false);
  assert.equal(p.remove("t", "u", "s1"), false, "unknown socket");
  assert.equal(p.remove("t", "u", "s2"), true);
  assert.deepEqual(p.members("t"), []);
});
