// A node catching up on a long backlog of the log (lib/cluster/replicated_env.ts `#drain`)
// applies it in slices with the event loop turning between them (requests, `/readyz`, are
// answered meanwhile), each slice one batch of LMDB's write thread: every write set lands
// whole, in log order, and what is stored always matches a prefix of the log.
import assert from "node:assert/strict";
import { join } from "node:path";
import { ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { fakeStream } from "./fake_link.ts";

Deno.test("catch-up: a backlog is applied in slices, the event loop turning between them, each write set whole and in order", async () => {
  const stream = fakeStream("late");
  const N = 3000;
  // Another node's write sets: position i writes ["a", i] and ["b", i], and moves "last" to i.
  for (let i = 1; i <= N; i++) {
    stream.add({
      o: "other",
      b: crypto.randomUUID(),
      base: i - 1,
      r: { p: [], g: [], a: [] },
      w: [[0, "objects", ["a", i], i], [0, "objects", ["b", i], "x".repeat(200)], [
        0,
        "objects",
        "last",
        i,
      ]],
    });
  }
  const env = new ReplicatedEnv(join(tempDir("sb-slices-"), "store.mdb"), stream.link, {
    writeDeadlineMs: 10_000,
  });
  const db = env.db("objects");
  // Looks at the store whenever the event loop turns during the catch-up.
  const seen: { applied: number; a: number; b: number; last: number }[] = [];
  let looking = true;
  const look = () => {
    if (!looking) return;
    const a = [...db.getKeys({ start: ["a"], end: ["a", Infinity] })].length;
    const b = [...db.getKeys({ start: ["b"], end: ["b", Infinity] })].length;
    seen.push({ applied: env.applied, a, b, last: (db.get("last") as number | undefined) ?? 0 });
    setTimeout(look, 0);
  };
  try {
    setTimeout(look, 0);
    await env.start(30_000);
    looking = false;
    assert.equal(env.applied, N);
    // Seen at several positions short of the end: the backlog went in several slices, the
    // event loop turning between them (one slice would show only where it started).
    const midway = new Set(
      seen.filter((s) => s.applied > 0 && s.applied < N).map((s) => s.applied),
    );
    assert.ok(
      midway.size >= 5,
      `the event loop turned between slices of the catch-up (seen at ${[...midway].join(", ")})`,
    );
    for (const s of seen) {
      assert.equal(s.a, s.b, "no write set seen half applied");
      assert.equal(
        s.last,
        s.a,
        "the stored state is a prefix of the log (position i's writes with all before it)",
      );
      assert.ok(s.a >= s.applied, "the position told is applied");
    }
    assert.deepEqual(
      [...db.getRange({ start: ["a"], end: ["a", Infinity] })].map(({ value }) => value),
      Array.from({ length: N }, (_, i) => i + 1),
    );
    assert.equal(db.get("last"), N);
  } finally {
    looking = false;
    await env.close();
  }
});
