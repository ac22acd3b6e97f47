import assert from "node:assert/strict";
import { applyOps, emptyRecord, parsePatch, parseTransaction } from "../../lib/objects/ops.ts";
import { ApiError } from "../../lib/http/errors.ts";

function status(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err.status;
    throw err;
  }
  return 0;
}

Deno.test("`applyOps()` materialises increments and appends as sets, in order", () => {
  const ops = parseTransaction([
    { op: "set", key: "a", value: 1 },
    { op: "increment", key: "a", by: 2 },
    { op: "append", key: "l", value: "x" },
    { op: "delete", key: "a" },
    { op: "increment", key: "n" },
  ]);
  const { record, material } = applyOps(emptyRecord(), ops);
  assert.deepEqual(record.state, { l: ["x"], n: 1 });
  assert.deepEqual(material, [
    { op: "set", key: "a", value: 1 },
    { op: "set", key: "a", value: 3 },
    { op: "set", key: "l", value: ["x"] },
    { op: "delete", key: "a", value: null },
    { op: "set", key: "n", value: 1 },
  ]);
  // sizes track the state exactly: deleting everything returns the total to 0
  const cleared = applyOps(
    record,
    parseTransaction([{ op: "delete", key: "l" }, { op: "delete", key: "n" }]),
  );
  assert.equal(cleared.record.total, 0);
});

Deno.test("`applyOps()` refuses type mismatches with 422 and leaves the input untouched", () => {
  const base = applyOps(emptyRecord(), parsePatch({ s: "x", l: [] })).record;
  const snapshot = structuredClone(base);
  assert.equal(
    status(() => applyOps(base, parseTransaction([{ op: "increment", key: "s" }]))),
    422,
  );
  assert.equal(
    status(() => applyOps(base, parseTransaction([{ op: "append", key: "s", value: 1 }]))),
    422,
  );
  assert.equal(
    status(() =>
      applyOps(
        base,
        parseTransaction([{ op: "set", key: "n", value: Number.MAX_VALUE }, {
          op: "increment",
          key: "n",
          by: Number.MAX_VALUE,
        }]),
      )
    ),
    422,
  );
  assert.deepEqual(base, snapshot);
});

Deno.test("`parseTransaction()` validates shape and count", () => {
  assert.equal(status(() => parseTransaction({})), 422);
  assert.equal(status(() => parseTransaction([])), 422);
  assert.equal(status(() => parseTransaction([{ op: "x", key: "a" }])), 422);
  assert.equal(status(() => parseTransaction([{ op: "set", key: "", value: 1 }])), 422);
  assert.equal(status(() => parseTransaction([{ op: "increment", key: "a", by: Infinity }])), 422);
  assert.equal(status(() => parseTransaction(Array(129).fill({ op: "delete", key: "a" }))), 413);
  assert.equal(parseTransaction(Array(128).fill({ op: "delete", key: "a" })).length, 128);
});
