// The client SDK's one resume cursor (sdk/client/stream_cursor.ts), shared by channels, objects
// and chat: the params it resumes with, a join reply (reset read from `replay`, or from the
// deprecated `reset: true` of older servers), duplicates skipped, purges.
import assert from "node:assert/strict";
import fc from "fast-check";
import { StreamCursor } from "../../sdk/client/stream_cursor.ts";

Deno.test("StreamCursor: no position, no replay asked; then after_{name} + epoch", () => {
  const c = new StreamCursor("serial");
  assert.deepEqual(c.params(), {});
  assert.equal(c.joined({ serial: 4, epoch: "0" }), false);
  assert.deepEqual(c.params(), { after_serial: 4, epoch: "0" });
  const l = new StreamCursor("log_id");
  l.seek(7);
  assert.deepEqual(l.params(), { after_log_id: 7 });
});

Deno.test("StreamCursor: a reset reply (new or deprecated encoding) moves the position back", () => {
  for (const flag of [{ replay: "reset" }, { reset: true }]) {
    const c = new StreamCursor("log_id");
    c.joined({ log_id: 10, epoch: "0" });
    assert.equal(c.joined({ log_id: 2, epoch: "e1", ...flag }), true);
    assert.deepEqual(c.params(), { after_log_id: 2, epoch: "e1" });
  }
  // An ephemeral channel's reply has no serial: no position to resume from.
  const e = new StreamCursor("serial");
  e.joined({ serial: null, replay: "none" });
  assert.deepEqual(e.params(), {});
});

Deno.test("StreamCursor: every position is applied once, in any arrival order", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 100 }), (positions) => {
      const c = new StreamCursor("serial");
      let max = 0;
      for (const p of positions) {
        assert.equal(c.advance(p), p > max);
        max = Math.max(max, p);
      }
      assert.equal(c.offset, positions.length ? max : undefined);
    }),
    { seed: 20261126, numRuns: 200 },
  );
});

Deno.test("StreamCursor: a purge restarts at 0 in the new epoch", () => {
  const c = new StreamCursor("log_id");
  c.joined({ log_id: 5, epoch: "0" });
  c.purged("e2");
  assert.deepEqual(c.params(), { after_log_id: 0, epoch: "e2" });
  assert.equal(c.advance(1), true);
  c.purged(undefined);
  assert.deepEqual(c.params(), { after_log_id: 0, epoch: "e2" });
});
