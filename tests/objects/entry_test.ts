import assert from "node:assert/strict";
import { pack, unpack } from "msgpackr";
import { packEntry, unpackEntry } from "../../lib/objects/entry.ts";
import type { MaterialOp } from "../../lib/objects/ops.ts";

Deno.test("packEntry()/unpackEntry(): a flat array round-trips every op kind through MessagePack; the earlier map form reads the same", () => {
  const cases: [boolean, MaterialOp[]][] = [
    [false, [{ op: "set", key: "v", value: { n: 1, "café": [true, null, 2 ** 53 - 1] } }]],
    [false, [{ op: "delete", key: "k:with:colons", value: null }]],
    [true, [{ op: "set", key: "a", value: "😀" }, { op: "delete", key: "b", value: null }, {
      op: "set",
      key: "c",
      value: [],
    }]],
  ];
  for (const [batch, ops] of cases) {
    const stored = packEntry(batch, ops);
    assert.equal(stored.length, 1 + 3 * ops.length);
    assert.deepEqual(unpackEntry(unpack(pack(stored))), { batch, ops });
    assert.deepEqual(unpackEntry({ batch, ops }), { batch, ops });
  }
});
