// The speculative run's overlay (`lib/cluster/overlay.ts`) against LMDB itself: the same
// random puts, removes and reads made once inside an LMDB write transaction that is aborted
// (how speculation ran before) and once through the overlay on a read snapshot must read
// alike, read for read (point reads, existence, ranges forward and reverse, with limits, keys
// only), on keys of every shape the products use (strings, numbers, composite keys, strings
// whose UTF-16 and UTF-8 orders differ).
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Key } from "lmdb";
import { StoreEnv } from "../../lib/store/env.ts";
import { OverlayReads, type RangeRead, WriteOverlay } from "../../lib/cluster/overlay.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** A small deterministic generator (the run is the same every time). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const KEYS: Key[] = [
  "a",
  "b",
  "ba",
  "c",
  "z",
  "\uffff",
  "\u{1F600}",
  "\ue000",
  "",
  1,
  2,
  10,
  -3,
  2.5,
  ["s", 1],
  ["s", 2],
  ["s", 10],
  ["s", "x"],
  ["s", "\uffff"],
  ["s", "\u{1F600}"],
  ["t", 0],
  ["s"],
  ["s", 1, "r"],
];

/** One operation of a scripted run: a write, or a read whose answer is compared. */
type Op =
  | { put: Key; value: unknown }
  | { remove: Key }
  | { get: Key }
  | { exists: Key }
  | { range: RangeRead; keys: boolean };

function script(seed: number, n: number): Op[] {
  const rnd = random(seed);
  const pick = <T>(list: T[]) => list[Math.floor(rnd() * list.length)];
  const ops: Op[] = [];
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.35) {
      ops.push({ put: pick(KEYS), value: pick([1, "v", { n: i, list: [i, "x"] }, null, [i]]) });
    } else if (r < 0.5) ops.push({ remove: pick(KEYS) });
    else if (r < 0.65) ops.push({ get: pick(KEYS) });
    else if (r < 0.72) ops.push({ exists: pick(KEYS) });
    else {
      const range: RangeRead = {};
      if (rnd() < 0.7) range.start = pick(KEYS);
      if (rnd() < 0.7) range.end = pick(KEYS);
      if (rnd() < 0.4) range.reverse = true;
      if (rnd() < 0.4) range.limit = 1 + Math.floor(rnd() * 4);
      ops.push({ range, keys: rnd() < 0.3 });
    }
  }
  return ops;
}

/** Runs `ops` on `read`/`write` functions, returning every read's answer. */
function play(
  ops: Op[],
  db: {
    put(k: Key, v: unknown): void;
    remove(k: Key): void;
    get(k: Key): unknown;
    exists(k: Key): boolean;
    range(o: RangeRead, keys: boolean): Iterable<unknown>;
  },
): unknown[] {
  const out: unknown[] = [];
  for (const op of ops) {
    if ("put" in op) db.put(op.put, op.value);
    else if ("remove" in op) db.remove(op.remove);
    else if ("get" in op) out.push(db.get(op.get));
    else if ("exists" in op) out.push(db.exists(op.exists));
    else out.push([...db.range({ ...op.range }, op.keys)]);
  }
  return out;
}

Deno.test("speculation overlay: reads over a snapshot with the run's writes answer as LMDB's own write transaction", async () => {
  const env = new StoreEnv(join(tempDir("sb-overlay-"), "store.mdb"), false);
  try {
    const raw = env.db("objects");
    // Stored state the runs start from: half the keys.
    await env.transaction(() => {
      for (const [i, k] of KEYS.entries()) if (i % 2 === 0) raw.put(k, { stored: i });
    });
    for (let seed = 1; seed <= 40; seed++) {
      const ops = script(seed, 60);
      // LMDB's own answers, inside a write transaction that is then aborted.
      let expected: unknown[] = [];
      try {
        env.root.transactionSync(() => {
          expected = play(ops, {
            put: (k, v) => void raw.put(k, v),
            remove: (k) => void raw.remove(k),
            get: (k) => raw.get(k),
            exists: (k) => raw.doesExist(k),
            range: (o, keys) => keys ? raw.getKeys(o) : raw.getRange(o),
          });
          throw new Error("abort");
        });
      } catch (err) {
        assert.equal((err as Error).message, "abort");
      }
      // The overlay's, on a read snapshot.
      const txn = env.root.useReadTransaction();
      let live = true;
      let actual: unknown[];
      try {
        const view = new OverlayReads("objects", raw, new WriteOverlay(), txn, () => live);
        actual = play(ops, {
          put: (k, v) => view.put(k, v),
          remove: (k) => view.remove(k),
          get: (k) => view.get(k),
          exists: (k) => view.doesExist(k),
          range: (o, keys) => view.range(keys ? { ...o, values: false } : o),
        });
      } finally {
        live = false;
        txn.done();
      }
      assert.deepEqual(actual, expected, `seed ${seed}: every read alike`);
    }
    // Nothing of the runs reached the store.
    assert.equal([...raw.getKeys()].length, Math.ceil(KEYS.length / 2));
  } finally {
    await env.close();
  }
});

Deno.test("speculation overlay: a value read back is a copy of what was put then, not the object put", async () => {
  const env = new StoreEnv(join(tempDir("sb-overlay-"), "store.mdb"), false);
  try {
    const raw = env.db("objects");
    const txn = env.root.useReadTransaction();
    try {
      const view = new OverlayReads("objects", raw, new WriteOverlay(), txn, () => true);
      const value = { n: 1 };
      view.put("k", value);
      value.n = 2;
      const first = view.get("k") as { n: number };
      assert.deepEqual(first, { n: 1 });
      first.n = 3;
      assert.deepEqual(view.get("k"), { n: 1 });
      assert.throws(() => view.put("x".repeat(3000), 1), /maximum key size/);
    } finally {
      txn.done();
    }
  } finally {
    await env.close();
  }
});
