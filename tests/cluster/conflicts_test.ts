// RecentWrites: the deterministic staleness check of the replicated log (optimistic
// concurrency): point reads, range reads (either direction), whole-database reads, the
// window, and rollback of a failed commit.
import assert from "node:assert/strict";
import { emptyReads, rangeBounds, RecentWrites } from "../../lib/cluster/conflicts.ts";

Deno.test("RecentWrites: a write set is stale exactly when a later position wrote what it read", () => {
  const recent = new RecentWrites(10);
  recent.record(1, [["meta", "s1"]]);
  recent.record(2, [["entries", ["s1", 5]], ["meta", "s1"]]);
  recent.record(3, [["other", "x"]]);

  const point = { ...emptyReads(), p: [["meta", "s1"]] as [string, string][] };
  assert.equal(recent.stale(1, 4, point), true, "s1 was written at 2, after base 1");
  assert.equal(recent.stale(2, 4, point), false, "nothing wrote s1 after base 2");
  assert.equal(recent.stale(0, 2, point), true, "position 1 (before 2) counts; 2 itself does not");
  assert.equal(recent.stale(1, 2, point), false);
  assert.equal(recent.stale(0, 4, { ...emptyReads(), p: [["meta", "s2"]] }), false, "another key");

  const range = (lo: unknown, hi: unknown) => ({
    ...emptyReads(),
    g: [["entries", lo, hi]] as never,
  });
  assert.equal(recent.stale(1, 4, range(["s1", 0], ["s1", 9])), true, "5 is inside [0, 9]");
  assert.equal(recent.stale(1, 4, range(["s1", 6], ["s1", 9])), false);
  assert.equal(
    recent.stale(1, 4, range(null, ["s1", 5])),
    true,
    "open lower bound, inclusive upper",
  );
  assert.equal(recent.stale(1, 4, range(["s2", 0], null)), false);
  assert.deepEqual(rangeBounds({ start: 9, end: 1, reverse: true }), [1, 9]);
  assert.deepEqual(rangeBounds({ start: 1 }), [1, null]);

  assert.equal(
    recent.stale(2, 4, { ...emptyReads(), a: ["other"] }),
    true,
    "a whole-database read",
  );
  assert.equal(recent.stale(3, 4, { ...emptyReads(), a: ["other"] }), false);

  recent.rollback(2);
  assert.equal(
    recent.stale(2, 4, { ...emptyReads(), a: ["other"] }),
    false,
    "position 3 rolled back",
  );
});

Deno.test("RecentWrites: a base older than the window is stale whatever it read; old positions are forgotten", () => {
  const recent = new RecentWrites(3, [[1, [["d", "k"]]]]);
  for (let s = 2; s <= 6; s++) recent.record(s, []);
  assert.equal(recent.stale(1, 7, emptyReads()), true, "6 positions behind a window of 3");
  assert.equal(recent.stale(3, 7, emptyReads()), false);
  assert.equal(
    recent.stale(3, 7, { ...emptyReads(), p: [["d", "k"]] }),
    false,
    "position 1 was forgotten",
  );
});
