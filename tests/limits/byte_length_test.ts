// How sizes are counted: UTF-8 bytes, the same as the bytes TextEncoder writes (a lone
// surrogate is encoded as U+FFFD, 3 bytes), for every limit of the service.
import assert from "node:assert/strict";
import fc from "fast-check";
import { byteLength, jsonBytes } from "../../lib/limits.ts";

const encoder = new TextEncoder();

Deno.test("byteLength counts the UTF-8 bytes TextEncoder writes, lone surrogates included", () => {
  const cases: [string, number][] = [["", 0], ["abc", 3], ["café", 5], ["日本", 6], ["😀", 4], [
    "\ud800",
    3,
  ], ["a\udc00b", 5]];
  for (const [s, n] of cases) assert.equal(byteLength(s), n, JSON.stringify(s));
  // Any UTF-16 code units, paired or not.
  const units = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 })
    .map((codes) => String.fromCharCode(...codes));
  fc.assert(
    fc.property(units, (s) => byteLength(s) === encoder.encode(s).length),
    { seed: 20261126, numRuns: 2000 },
  );
});

Deno.test("jsonBytes is the UTF-8 length of the JSON text, 0 for undefined", () => {
  assert.equal(jsonBytes(undefined), 0);
  assert.equal(jsonBytes({ a: "é" }), 10);
});

Deno.test("jsonBytes of a number is the length of its JSON text, integers of every size included", () => {
  const edges = [
    0,
    -0,
    9,
    10,
    -10,
    99,
    100,
    2 ** 53 - 1,
    -(2 ** 53),
    1e20,
    999999999999999999999,
    1e21,
    -1e21,
    0.5,
    -1.25e-7,
    5e-324,
    Number.MAX_VALUE,
  ];
  for (const n of edges) assert.equal(jsonBytes(n), JSON.stringify(n).length, String(n));
  const numbers = fc.oneof(
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.bigInt({ min: -(10n ** 23n), max: 10n ** 23n }).map(Number),
  );
  fc.assert(fc.property(numbers, (n) => jsonBytes(n) === JSON.stringify(n).length), {
    seed: 20261126,
    numRuns: 5000,
  });
});
