// Pipelined commits (CommitQueue, StoreEnv.batch): a batch handed over while the one before it
// is still syncing is built on that one's rows, so it must never commit when that one fails.
// A real LMDB environment on a small tmpfs that fills up (mounting needs root, as in CI).
import assert from "node:assert/strict";
import { StoreEnv } from "../../lib/store/env.ts";
import { isCommitFailure, StorageUnavailableError } from "../../lib/store/errors.ts";
import { tempStore } from "../helpers/temp_store.ts";
import { tmpfs } from "../helpers/tmpfs.ts";

// A failed commit also rejects a promise lmdb-js holds alone (see isCommitFailure); the server
// ignores it the same way.
globalThis.addEventListener("unhandledrejection", (e) => {
  if (isCommitFailure(e.reason)) e.preventDefault();
});

Deno.test("CommitQueue: a batch built on one that fails to commit fails with it and writes nothing", async () => {
  const disk = await tmpfs(8);
  const env = new StoreEnv(`${disk.path}/test.mdb`);
  try {
    const rows = env.db<number | string>("rows");
    const q = env.commits;
    const set = (key: string, value: number | string | undefined) => q.run(() => q.write(rows, key, value), true);
    for (let n = 1; n <= 10; n++) await set("n", n);
    await disk.fill();

    // Batch A needs more room than is left; batch B goes while A is syncing, built on A's row.
    // lmdb-js may commit B in A's transaction or in the next one: B must fail either way.
    const a = q.run(() => {
      q.write(rows, "n", 11);
      q.write(rows, "big", "x".repeat(2_000_000));
    }, true);
    await new Promise((resolve) => setImmediate(resolve)); // A is handed to lmdb-js
    let seen: number | undefined;
    const b = q.run(() => {
      seen = q.read(rows, "n") as number;
      q.write(rows, "n", seen + 1);
    }, true);
    const [ra, rb] = await Promise.allSettled([a, b]);
    assert.equal(seen, 11, "B ran while A was in flight, on A's row");
    assert.equal(ra.status, "rejected");
    assert.ok((ra as PromiseRejectedResult).reason instanceof StorageUnavailableError);
    assert.equal(rb.status, "rejected", "B must not outlive A");
    assert.ok((rb as PromiseRejectedResult).reason instanceof StorageUnavailableError);
    assert.equal(rows.get("n"), 10);
    assert.equal(rows.get("big"), undefined);
    assert.equal(q.read(rows, "n"), 10);

    // Space returns: writes go on from what was committed.
    await disk.unfill();
    await q.run(() => q.write(rows, "n", (q.read(rows, "n") as number) + 1), true);
    assert.equal(rows.get("n"), 11);
  } finally {
    await env.close();
    await disk.unmount();
  }
});

Deno.test("StoreEnv.batch: a chained batch commits only if the batch before it did", async () => {
  const { env } = tempStore();
  try {
    const rows = env.db<number>("rows");
    const a = env.batch(() => {
      throw new Error("A refused");
    });
    const b = env.batch(() => rows.put("b", 1), true);
    const c = env.batch(() => rows.put("c", 1), true);
    await assert.rejects(a, /A refused/);
    await assert.rejects(b, StorageUnavailableError);
    await assert.rejects(c, StorageUnavailableError, "a batch chained to a refused one is refused");
    assert.deepEqual([rows.get("b"), rows.get("c")], [undefined, undefined]);
    // An unchained batch starts the chain again.
    await Promise.all([env.batch(() => rows.put("d", 1)), env.batch(() => rows.put("e", 1), true)]);
    assert.deepEqual([rows.get("d"), rows.get("e")], [1, 1]);
  } finally {
    await env.close();
  }
});

Deno.test("CommitQueue: a batch goes while the one before it syncs, and both commit in order", async () => {
  const disk = await tmpfs(8);
  const env = new StoreEnv(`${disk.path}/test.mdb`);
  try {
    const rows = env.db<number>("rows");
    const q = env.commits;
    const add = () => q.run(() => q.write(rows, "n", (q.read(rows, "n") ?? 0) + 1), true);
    const settled: string[] = [];
    const first = add().then(() => settled.push("first"));
    await new Promise((resolve) => setImmediate(resolve));
    let inFlight = false;
    const second = q.run(() => {
      inFlight = settled.length === 0;
      q.write(rows, "n", (q.read(rows, "n") ?? 0) + 1);
    }, true).then(() => settled.push("second"));
    await Promise.all([first, second]);
    assert.ok(inFlight, "the second batch ran before the first settled");
    assert.deepEqual(settled, ["first", "second"]);
    assert.equal(rows.get("n"), 2);
  } finally {
    await env.close();
    await disk.unmount();
  }
});
