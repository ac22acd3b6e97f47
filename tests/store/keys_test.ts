// The prefix-cached key decoder reads every key exactly as ordered-binary does, in any order of
// keys (the cache must never hand one key's leading string to another), and writes the same
// bytes. Property-based (fast-check, seeded) over arbitrary Unicode strings and numbers.
import assert from "node:assert/strict";
import fc from "fast-check";
import { readKey, writeKey } from "ordered-binary";
import { open } from "lmdb";
import { prefixCachedKeys } from "../../lib/store/keys.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { CODEC_OPTIONS } from "../../lib/store/codec.ts";

const SEED = 20261125;

/** A key part as the stores use them: any string (control characters included) or number. */
const part = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom("", "\u0000", "\u0004x", "\u001bq", "app-1", "café"),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
  fc.constantFrom(0, 1, 2 ** 53 - 1, -1, 1.5),
);
/** A key: one part, or a composite of 2-4 parts. */
const key = fc.oneof(part, fc.array(part, { minLength: 2, maxLength: 4 }));

/** Encodes `k` the way lmdb-js does (null-terminated ordered-binary) into a fresh buffer. */
function encode(k: Parameters<typeof writeKey>[0]): { bytes: Uint8Array; end: number } {
  const bytes = new Uint8Array(4096);
  const end = writeKey(k, bytes, 0);
  return { bytes, end };
}

Deno.test("prefix-cached keys decode every key sequence exactly as ordered-binary does", () => {
  fc.assert(
    fc.property(
      fc.array(key, { minLength: 1, maxLength: 30 }),
      fc.array(fc.nat(29), { maxLength: 60 }),
      (keys, order) => {
        const cached = prefixCachedKeys();
        // The keys in order, then revisited out of order: runs of equal prefixes and switches.
        for (const i of [...keys.keys(), ...order.map((o) => o % keys.length)]) {
          const { bytes, end } = encode(keys[i]);
          assert.deepEqual(cached.readKey(bytes, 0, end), readKey(bytes, 0, end));
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

Deno.test("prefix-cached keys: a stream's keys that share the leading string reuse it", () => {
  const cached = prefixCachedKeys();
  const stream = "app-1\u0000objects/日本/😀";
  for (let i = 1; i <= 3; i++) {
    const { bytes, end } = encode([stream, i]);
    assert.deepEqual(cached.readKey(bytes, 0, end), [stream, i]);
  }
  // A key whose leading string only starts like the cached one is decoded in full.
  const longer = encode([`${stream}x`, 4]);
  assert.deepEqual(cached.readKey(longer.bytes, 0, longer.end), [`${stream}x`, 4]);
  const single = encode(stream);
  assert.equal(cached.readKey(single.bytes, 0, single.end), stream);
});

Deno.test("a store's ranges and keys read back through the prefix-cached encoder, and match the bytes lmdb-js writes by default", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const env = new StoreEnv(`${dir}/a`);
    const db = env.db("log");
    const streams = ["s-é", "s-é2", "t", "\u0004"];
    await env.transaction(() => {
      for (const s of streams) for (let i = 1; i <= 50; i++) db.put([s, i], { i });
    });
    for (const s of streams) {
      const got = [...db.getRange({ start: [s, 0], end: [s, Infinity] })].map((
        { key, value },
      ) => [key, value]);
      assert.deepEqual(got, Array.from({ length: 50 }, (_, n) => [[s, n + 1], { i: n + 1 }]));
    }
    await env.close();
    // The same file opened with lmdb-js's default key encoding reads the same keys.
    const plain = open({ path: `${dir}/a` });
    const log = plain.openDB({
      name: "log",
      keyEncoding: "ordered-binary",
      encoding: "msgpack",
      ...CODEC_OPTIONS,
    });
    assert.equal([...log.getKeys({ start: ["t", 0], end: ["t", Infinity] })].length, 50);
    assert.deepEqual(log.get(["s-é2", 7]), { i: 7 });
    await plain.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
