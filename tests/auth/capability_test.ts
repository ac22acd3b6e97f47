import assert from "node:assert/strict";
import {
  capabilityMatches,
  makePrincipal,
  parseCapability,
  validateCapabilities,
} from "../../lib/auth/capability.ts";

Deno.test("`parseCapability()` accepts every product and verb of the grammar", () => {
  const good = [
    "channel:subscribe:news",
    "channel:publish:private-room",
    "channel:presence:presence-lobby",
    "channel:subscribe:a:b:c",
    "object:read:order/42",
    "object:read:order/a:b/c",
    "chat:subscribe:t1",
    "chat:publish:user_message:t1",
    "chat:cancel_own:t1",
    "chat:tool_approval:t1",
    "chat:publish:run_lifecycle:t1",
    "chat:publish:token:t1",
    "chat:publish:message:t1",
    "chat:publish:cancel_any:t1",
    "chat:subscribe:thread:with:colons",
  ];
  for (const cap of good) assert.ok(parseCapability(cap), cap);
});

Deno.test("`parseCapability()` splits chat publish verbs and keeps the rest as resource", () => {
  assert.deepEqual(parseCapability("chat:publish:user_message:a:b"), {
    product: "chat",
    verb: "publish:user_message",
    resource: "a:b",
    kind: "exact",
    prefix: "a:b",
  });
  assert.equal(parseCapability("channel:subscribe:x:y")?.resource, "x:y");
});

Deno.test("`parseCapability()` accepts a lone `*` and a `/*` prefix", () => {
  assert.equal(parseCapability("channel:subscribe:*")?.kind, "all");
  assert.equal(parseCapability("object:read:*")?.kind, "all");
  const p = parseCapability("object:read:order/*");
  assert.equal(p?.kind, "prefix");
  assert.equal(p?.prefix, "order/");
  assert.equal(parseCapability("channel:subscribe:private-user/*")?.kind, "prefix");
});

Deno.test("`parseCapability()` rejects malformed strings", () => {
  const bad: unknown[] = [
    "",
    "channel",
    "channel:subscribe",
    "channel:subscribe:",
    "channel:read:x",
    "object:subscribe:a/b",
    "object:read:ab",
    "object:read:/b",
    "object:read:a/",
    "chat:publish:t1",
    "chat:publish:bogus:t1",
    "chat:publish:user_message:",
    "chat:delete:t1",
    "space:subscribe:x",
    ":subscribe:x",
    "channel::x",
    "channel:subscribe:a*b",
    "object:read:order/*/x",
    "object:read:/b*",
    "channel:subscribe:**",
    "channel:subscribe:*/x",
    42,
    null,
  ];
  for (const cap of bad) assert.equal(parseCapability(cap), null, String(cap));
});

Deno.test("`validateCapabilities()` accepts a good list and returns a copy", () => {
  const list = ["channel:subscribe:a", "object:read:t/k"];
  const res = validateCapabilities(list);
  assert.deepEqual(res, { ok: true, capabilities: list });
  assert.ok(res.ok && res.capabilities !== list);
});

Deno.test("`validateCapabilities()` refuses non-arrays, empty, duplicates and bad entries", () => {
  const cases: [unknown, RegExp][] = [
    ["channel:subscribe:a", /array/],
    [undefined, /array/],
    [[], /empty/],
    [["channel:subscribe:a", "channel:subscribe:a"], /"channel:subscribe:a" is duplicated/],
    [["channel:subscribe:a", "oops"], /"oops" is malformed/],
    [["channel:subscribe:a*b"], /"channel:subscribe:a\*b" is malformed/],
    [[7], /7 is not a string/],
  ];
  for (const [input, detail] of cases) {
    const res = validateCapabilities(input);
    assert.equal(res.ok, false);
    assert.match((res as { detail: string }).detail, detail);
  }
});

Deno.test("`capabilityMatches()` matches exact grants only on the same product and verb", () => {
  const granted = ["channel:subscribe:news", "chat:subscribe:t1"];
  assert.ok(capabilityMatches(granted, "channel:subscribe:news"));
  assert.ok(!capabilityMatches(granted, "channel:publish:news"));
  assert.ok(!capabilityMatches(granted, "channel:subscribe:news2"));
  assert.ok(!capabilityMatches(granted, "chat:publish:user_message:t1"));
  assert.ok(!capabilityMatches(granted, "object:read:news/x"));
});

Deno.test("`capabilityMatches()` honours a trailing wildcard", () => {
  const granted = ["object:read:order/*"];
  assert.ok(capabilityMatches(granted, "object:read:order/42"));
  assert.ok(capabilityMatches(granted, "object:read:order/a/b"));
  assert.ok(!capabilityMatches(granted, "object:read:orders/1"));
  assert.ok(!capabilityMatches(granted, "object:read:user/1"));
  assert.ok(
    capabilityMatches(["channel:subscribe:private-user/*"], "channel:subscribe:private-user/7"),
  );
});

Deno.test("`capabilityMatches()` honours a lone `*` per product and verb", () => {
  const granted = ["channel:subscribe:*"];
  assert.ok(capabilityMatches(granted, "channel:subscribe:anything:at:all"));
  assert.ok(!capabilityMatches(granted, "channel:publish:x"));
  assert.ok(!capabilityMatches(["chat:subscribe:*"], "chat:publish:user_message:t1"));
  assert.ok(capabilityMatches(["chat:publish:token:*"], "chat:publish:token:t9"));
});

Deno.test("`capabilityMatches()` never widens: a wildcard need needs an equal or wider grant", () => {
  assert.ok(!capabilityMatches(["object:read:order/1"], "object:read:order/*"));
  assert.ok(!capabilityMatches(["object:read:order/*"], "object:read:*"));
  assert.ok(capabilityMatches(["object:read:order/*"], "object:read:order/a/*"));
  assert.ok(capabilityMatches(["object:read:*"], "object:read:*"));
});

Deno.test("`capabilityMatches()` ignores malformed grants and malformed needs", () => {
  assert.ok(!capabilityMatches(["channel:subscribe:a*b"], "channel:subscribe:a*b"));
  assert.ok(!capabilityMatches(["channel:subscribe:*"], "channel:subscribe:"));
  assert.ok(!capabilityMatches(["channel:subscribe:*"], "nonsense"));
});

Deno.test("`capabilityMatches()`: a trailing `*` after any prefix is a prefix grant", () => {
  const grants = [
    "channel:subscribe:private-user-42-*",
    "object:read:order/*",
    "chat:subscribe:ab*",
  ];
  for (const cap of grants) assert.ok(parseCapability(cap), cap);
  assert.ok(capabilityMatches(grants, "channel:subscribe:private-user-42-inbox"));
  assert.ok(!capabilityMatches(grants, "channel:subscribe:private-user-43-inbox"));
  assert.ok(capabilityMatches(grants, "chat:subscribe:abc"));
  assert.ok(capabilityMatches(grants, "object:read:order/7"));
  assert.ok(capabilityMatches(grants, "object:read:order/a/b"), "key order... holds a slash");
  // Types never hold `/`: `order/*` cannot reach another type such as `orders`.
  assert.ok(!capabilityMatches(grants, "object:read:orders/1"));
});

Deno.test("`capabilityMatches()`: a needed resource holding `*` is a literal name", () => {
  assert.ok(capabilityMatches(["chat:subscribe:*"], "chat:subscribe:t*1"));
  assert.ok(capabilityMatches(["chat:subscribe:t*"], "chat:subscribe:t*1"));
  assert.ok(!capabilityMatches(["chat:subscribe:t1"], "chat:subscribe:t*1"));
  // A prefix need is not widened: `t*` needed is the thread named `t*`, not every t-thread.
  assert.ok(!capabilityMatches(["chat:subscribe:t1"], "chat:subscribe:t*"));
  // Built-in grant sets name the thread exactly, `*` included.
  const anon = makePrincipal({
    socketId: "s",
    kind: "anonymous",
    capabilities: ["chat:subscribe:t*1"],
    literal: true,
  });
  assert.ok(anon.can("chat:subscribe:t*1"));
  assert.ok(!anon.can("chat:subscribe:t11"));
  const star = makePrincipal({
    socketId: "s",
    kind: "anonymous",
    capabilities: ["chat:subscribe:t*"],
    literal: true,
  });
  assert.ok(star.can("chat:subscribe:t*"));
  assert.ok(!star.can("chat:subscribe:tx"), "a literal grant is no prefix");
});

Deno.test("`capabilityMatches()`: object resources split at the first `/` (type never holds one)", () => {
  assert.ok(capabilityMatches(["object:read:a/b/c"], "object:read:a/b/c"));
  assert.ok(!capabilityMatches(["object:read:order/*"], "object:read:order%2Fsecret/x"));
});

Deno.test("`makePrincipal()` builds a Principal whose can() uses the grant list", () => {
  const p = makePrincipal({
    socketId: "s1",
    clientId: "u1",
    kind: "token",
    capabilities: ["chat:subscribe:t1"],
  });
  assert.equal(p.socketId, "s1");
  assert.equal(p.clientId, "u1");
  assert.equal(p.kind, "token");
  assert.deepEqual(p.capabilities, ["chat:subscribe:t1"]);
  assert.ok(p.can("chat:subscribe:t1"));
  assert.ok(!p.can("chat:subscribe:t2"));
  const anon = makePrincipal({ socketId: "s2", kind: "anonymous", capabilities: [] });
  assert.ok(!("clientId" in anon));
  assert.ok(!anon.can("channel:subscribe:x"));
});
