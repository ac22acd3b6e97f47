// The one Topic grammar (lib/wire/topic.ts, re-exported by lib/streams/names.ts): `of` (which
// formats the value's key) and parse are inverse over arbitrary Unicode names (colons, control characters, astral
// characters included), malformed topics parse to null, and the socket layer's join check and
// the product address builders agree with it. Property-based (fast-check, seeded).
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  channelAddress,
  objectAddress,
  objectName,
  objectOfStream,
  objectStreamPrefix,
  threadAddress,
  Topic,
} from "../../lib/streams/mod.ts";
import { parseTopic } from "../../lib/socket/topics.ts";

const SEED = 20261126;

/** Any non-empty string, in graphemes or raw UTF-16 units (lone surrogates included). */
const text = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
  fc.string({ unit: "binary", minLength: 1, maxLength: 30 }),
  fc.constantFrom(":", "::", "a:b", "\u0000", "é:ü", "🙂:🙂"),
);
/** A product or app key: non-empty, no colon. */
const segment = text.map((s) => s.replaceAll(":", "")).filter((s) => s !== "");

Deno.test("Topic: parse(of(p, a, n).key) is of(p, a, n) for any product, app key and name", () => {
  fc.assert(
    fc.property(segment, segment, text, (product, appKey, name) => {
      const t = Topic.of(product, appKey, name);
      assert.deepEqual({ ...t }, { product, appKey, name, key: `${product}:${appKey}:${name}` });
      const s = t.key;
      assert.deepEqual(Topic.parse(s), t);
      assert.deepEqual(Topic.parseOf(s, product), t);
      assert.ok(Topic.same(Topic.parse(s)!, t));
      assert.equal(Topic.productOf(s), product);
    }),
    { seed: SEED, numRuns: 500 },
  );
});

Deno.test("Topic: format(parse(s)) is s for every string that parses", () => {
  fc.assert(
    fc.property(fc.oneof(text, fc.tuple(text, text, text).map((p) => p.join(":"))), (s) => {
      const t = Topic.parse(s);
      if (t === null) return;
      assert.equal(t.key, s);
      assert.deepEqual(Topic.of(t.product, t.appKey, t.name), t);
      assert.ok(t.product !== "" && t.appKey !== "" && t.name !== "");
      assert.ok(!t.product.includes(":") && !t.appKey.includes(":"));
    }),
    { seed: SEED, numRuns: 500 },
  );
});

Deno.test("Topic: malformed topics parse to null; parseOf checks the product", () => {
  for (
    const bad of [
      "",
      "pubsub",
      "pubsub:",
      "pubsub:key",
      "pubsub:key:",
      "pubsub::name",
      ":key:name",
      "::",
    ]
  ) {
    assert.equal(Topic.parse(bad), null, JSON.stringify(bad));
  }
  assert.deepEqual(Topic.parse("durable:k:cart:42"), {
    product: "durable",
    appKey: "k",
    name: "cart:42",
    key: "durable:k:cart:42",
  });
  assert.equal(Topic.parseOf("pubsubx:k:n", "pubsub"), null);
  assert.equal(Topic.parseOf("chat:k:n", "pubsub"), null);
  assert.deepEqual(
    Topic.parseOf("pusher-user:k:u:1", "pusher-user"),
    Topic.of("pusher-user", "k", "u:1"),
  );
  assert.ok(!Topic.same(Topic.of("pubsub", "k", "a"), Topic.of("pubsub", "k", "b")));
  assert.equal(Topic.productOf("nocolon"), null);
});

Deno.test("Topic: the socket layer's join check and the address builders use the same grammar", () => {
  const app = { id: "app-1", key: "key1" };
  fc.assert(
    fc.property(segment, text, text, (key, name, objKey) => {
      const known = (p: string) => p === "pubsub" || p === "chat" || p === "durable";
      const a = { id: "a", key };
      const ch = channelAddress(a, name).topic.key;
      assert.deepEqual(parseTopic(ch, key, known), Topic.of("pubsub", key, name));
      assert.equal(parseTopic(ch, key + "x", known), "app_key mismatch");
      assert.deepEqual(Topic.parse(threadAddress(a, name).topic.key), Topic.of("chat", key, name));
      const type = name.replaceAll(":", "") || "t";
      const obj = Topic.parse(objectAddress(a, type, objKey).topic.key)!;
      assert.equal(obj.product, "durable");
      assert.deepEqual(objectName(obj.name), { type, key: objKey });
      // Stream ids read back (console listings): any type, `/` and `%` included.
      const stream = objectAddress(a, name, objKey).stream;
      assert.deepEqual(objectOfStream(a, stream), { type: name, key: objKey });
      assert.ok(stream.startsWith(objectStreamPrefix(a, name)));
    }),
    { seed: SEED, numRuns: 300 },
  );
  assert.equal(parseTopic("spaces:key1:x", "key1", () => false), "invalid topic format");
  assert.equal(parseTopic("pubsub:key1:", "key1", () => true), "invalid topic format");
  assert.equal(objectAddress(app, "cart", "42").topic.key, "durable:key1:cart:42");
  assert.equal(channelAddress(app, "news").topic.key, "pubsub:key1:news");
  assert.equal(threadAddress(app, "t1").topic.key, "chat:key1:t1");
  assert.equal(objectName("nocolon"), null);
  assert.equal(objectOfStream(app, "app-2/cart/1"), null);
  assert.equal(objectOfStream(app, "app-1/notype"), null);
  assert.deepEqual(objectOfStream(app, "app-1/a%2Fb%25/k/1"), { type: "a/b%", key: "k/1" });
});
