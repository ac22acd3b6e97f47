// keyOf() (lib/wire/key.ts), the one way a key is made of several ids: two different tuples of
// one arity never give the same key, the key splits back into its tuple, listing prefixes hold
// exactly the keys whose part starts with the prefix, and the stream ids of apps within the id
// grammar are byte for byte those written before keyOf existed (no stored data moves).
import assert from "node:assert/strict";
import fc from "fast-check";
import { escapeKeyPart, keyOf, keyPrefix, splitKey } from "../../lib/wire/key.ts";
import {
  channelAddress,
  objectAddress,
  objectOfStream,
  objectStreamPrefix,
  threadAddress,
} from "../../lib/streams/names.ts";

const SEED = Number(Deno.env.get("PROPERTY_SEED") ?? "20261128");
const RUNS = 2000;

/** Any Unicode text, separators and escapes likely: `/`, `%`, `%2F`, `%25`, `\n`, `:`, NUL. */
const part = fc.oneof(
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.array(fc.constantFrom("/", "%", "%2F", "%25", "2F", "\n", ":", "\u0000", "a", "é", "😀"), {
    maxLength: 6,
  }).map((a) => a.join("")),
);
/** An app id of the grammar. */
const appId = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);

Deno.test("keyOf: distinct tuples of one arity never share a key, and the key splits back", () => {
  for (const arity of [1, 2, 3, 4]) {
    const tuple = fc.array(part, { minLength: arity, maxLength: arity });
    fc.assert(
      fc.property(tuple, tuple, (a, b) => {
        assert.equal(keyOf(...a) === keyOf(...b), a.every((p, i) => p === b[i]));
        assert.deepEqual(splitKey(keyOf(...a), arity), a);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }
});

Deno.test("keyOf: hand-picked tuples that a plain join would merge stay apart", () => {
  const pairs: [string[], string[]][] = [
    [["acme", "eu/t/k"], ["acme/eu", "t/k"]],
    [["acme", "eu", "t/k"], ["acme/eu", "t", "k"]],
    [["n", "l\nu"], ["n\nl", "u"]],
    [["a", "b%2Fc", "d"], ["a", "b/c", "d"]],
    [["a", "b%", "c"], ["a", "b%25", "c"]],
    [["t\nx", "r"], ["t", "x\nr"]],
    [["a\u0000b", "c"], ["a", "b\u0000c"]],
  ];
  for (const [a, b] of pairs) assert.notEqual(keyOf(...a), keyOf(...b), `${a} / ${b}`);
});

Deno.test("keyPrefix: holds exactly the keys whose next part starts with the partial", () => {
  fc.assert(
    fc.property(part, part, part, part, (lead, partial, x, rest) => {
      const key = keyOf(lead, x, rest);
      assert.equal(key.startsWith(keyPrefix([lead], partial)), x.startsWith(partial));
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

Deno.test("stream ids keep the layout written before keyOf (no migration)", () => {
  fc.assert(
    fc.property(appId, part, part, part, (id, type, key, name) => {
      const app = { id, key: "k" };
      // The formats of the releases before keyOf.
      const oldType = type.replaceAll("%", "%25").replaceAll("/", "%2F");
      assert.equal(objectAddress(app, type, key).stream, `${id}/${oldType}/${key}`);
      assert.equal(channelAddress(app, name).stream, `${id}/${name}`);
      assert.equal(threadAddress(app, name).stream, `${id}/${name}`);
      assert.equal(escapeKeyPart(id), id);
      // The console's listing reads objects back, and only the app's own.
      assert.deepEqual(objectOfStream(app, objectAddress(app, type, key).stream), { type, key });
      assert.ok(objectAddress(app, type, key).stream.startsWith(objectStreamPrefix(app)));
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

Deno.test("apps of the grammar never share a stream, whatever their names", () => {
  const app = fc.record({ id: appId, key: fc.constant("k") });
  fc.assert(
    fc.property(app, app, part, part, part, part, (a, b, t1, k1, t2, k2) => {
      fc.pre(a.id !== b.id);
      assert.notEqual(objectAddress(a, t1, k1).stream, objectAddress(b, t2, k2).stream);
      assert.notEqual(channelAddress(a, k1).stream, channelAddress(b, k2).stream);
      assert.notEqual(threadAddress(a, k1).stream, threadAddress(b, k2).stream);
      assert.equal(objectOfStream(a, objectAddress(b, t2, k2).stream), null);
      assert.ok(!objectAddress(b, t2, k2).stream.startsWith(objectStreamPrefix(a)));
    }),
    { seed: SEED, numRuns: RUNS },
  );
});
