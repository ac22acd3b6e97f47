import assert from "node:assert/strict";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { open } from "lmdb";
import { tempStore } from "../helpers/temp_store.ts";
import { StorageUnavailableError } from "../../lib/store/errors.ts";

/** Holds the answer of each chained batch `env` commits until `release(i)` (i: the batch's
 * number from 0), and makes batch `fail` fail as a refused commit does: the store really skips
 * it (it is chained on a mark that never committed) and it rejects with `StorageUnavailableError`. */
function holdBatches(env: StoreEnv, fail = -1) {
  const chained = env.chained.bind(env);
  const gates: (() => void)[] = [];
  const handed: number[] = [];
  env.chained = (fn, after) => {
    const i = handed.length;
    handed.push(i);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    gates[i] = open;
    const c = chained(fn, i === fail ? -1 : after);
    const committed = c.committed.then(async (ok) => {
      await gate;
      if (i === fail) {
        assert.equal(ok, false, "the store skipped the failing batch");
        throw new StorageUnavailableError("injected");
      }
      return ok;
    });
    return { mark: c.mark, committed };
  };
  return { handed: () => handed.length, release: (i: number) => gates[i]() };
}

/** Whether `p` has settled by the end of the next turn of the event loop. */
async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setTimeout(r, 20));
  return done;
}

/** Counts the LMDB transactions `env` runs. */
function countTransactions(env: StoreEnv): () => number {
  let n = 0;
  const run = env.transaction.bind(env);
  env.transaction = (fn) => (n++, run(fn));
  return () => n;
}

Deno.test("CommitQueue: jobs queued in one turn share one commit; a throwing job keeps nothing and spoils no other", async () => {
  const { env } = tempStore();
  const commits = countTransactions(env);
  const rows = env.db<number>("rows");
  const q = env.commits;
  const jobs = Array.from({ length: 50 }, (_, i) =>
    q.run(() => {
      rows.put(`direct${i}`, i);
      q.write(rows, `staged${i}`, i * 10);
      if (i % 7 === 3) throw new Error(`job ${i} refused`);
      return i;
    }));
  const settled = await Promise.allSettled(jobs);
  assert.equal(commits(), 1);
  settled.forEach((s, i) => {
    if (i % 7 === 3) {
      assert.equal(s.status, "rejected");
      assert.equal(rows.get(`direct${i}`), undefined);
      assert.equal(q.read(rows, `staged${i}`), undefined);
    } else {
      assert.deepEqual(s, { status: "fulfilled", value: i });
      assert.equal(rows.get(`direct${i}`), i);
      assert.equal(rows.get(`staged${i}`), i * 10, "a staged row is in the store once committed");
      assert.equal(q.read(rows, `staged${i}`), i * 10);
    }
  });
  await env.close();
});

Deno.test("CommitQueue: a job reads its own and earlier jobs' staged rows; removal stages too", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const q = env.commits;
  const add = () => q.run(() => q.write(rows, "n", (q.read(rows, "n") ?? 0) + 1));
  await Promise.all(Array.from({ length: 100 }, add));
  assert.equal(rows.get("n"), 100);
  await Promise.all([add(), q.run(() => q.write(rows, "n", undefined)), add()]);
  assert.equal(rows.get("n"), 1);
  assert.equal(q.read(rows, "n"), 1);
  await env.close();
});

Deno.test("OrderedLog on the CommitQueue: cached heads agree with the store across appends, trims and purges", async () => {
  const { env, path } = tempStore();
  const log = new OrderedLog(env);
  const one = (i: number) => () => ({ entries: [{ i }], result: i });
  await Promise.all(Array.from({ length: 300 }, (_, i) => log.append(`s${i % 3}`, one(i))));
  await log.trim("s0", { maxCount: 10 });
  await Promise.all([log.append("s0", one(1000)), log.purge("s1"), log.append("s2", one(1001))]);
  await log.append("s1", one(1002));
  const expected = { s0: [101, 91], s1: [1, 1], s2: [101, 1] };
  for (const [s, [head, first]] of Object.entries(expected)) {
    assert.deepEqual([log.head(s), log.first(s)], [head, first], s);
  }
  await env.close();
  const reopened = new StoreEnv(path);
  const fresh = new OrderedLog(reopened);
  for (const [s, [head, first]] of Object.entries(expected)) {
    assert.deepEqual([fresh.head(s), fresh.first(s)], [head, first], `${s} as stored`);
    assert.deepEqual(
      fresh.after(s, 0).map((r) => r.position),
      Array.from({ length: head - first + 1 }, (_, i) => first + i),
    );
  }
  await reopened.close();
});

Deno.test("StoreEnv reads values that earlier versions stored as msgpackr records", async () => {
  const { path } = tempStore();
  // How releases before 2026-11-25 opened the store: msgpack values with inline records.
  const old = open({ path, maxDbs: 64, encoding: "msgpack", sharedStructuresKey: undefined });
  const entries = old.openDB({
    name: "log:entries",
    keyEncoding: "ordered-binary",
    encoding: "msgpack",
  });
  const meta = old.openDB({ name: "log:meta", keyEncoding: "ordered-binary", encoding: "msgpack" });
  const entry = {
    batch: false,
    ops: [{ op: "set", key: "v", value: { n: 1, "café": [true, null] } }],
  };
  await old.transaction(() => {
    entries.put(["s", 1], { t: 5, e: entry });
    entries.put(["s", 2], { t: 6, e: entry });
    meta.put("s", { head: 2, first: 1 });
  });
  await old.close();
  const env = new StoreEnv(path);
  const log = new OrderedLog(env);
  assert.equal(log.head("s"), 2);
  assert.deepEqual(log.after("s", 0), [{ position: 1, time: 5, entry }, {
    position: 2,
    time: 6,
    entry,
  }]);
  await log.append("s", () => ({ entries: [entry], result: null }));
  assert.deepEqual(log.after("s", 2).map((r) => [r.position, r.entry]), [[3, entry]]);
  await env.close();
});

Deno.test("CommitQueue.keep(): the row is cached but never put, unless an earlier job of the batch wrote it; read() derives it again with load", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const q = env.commits;
  await q.run(() => q.keep(rows, "kept", 1));
  assert.equal(rows.get("kept"), undefined, "a kept row is not stored");
  assert.equal(q.read(rows, "kept", () => -1), 1, "the cache answers");
  await Promise.all([
    q.run(() => q.write(rows, "mixed", 1)),
    q.run(() => q.keep(rows, "mixed", 2)),
  ]);
  assert.equal(rows.get("mixed"), 2, "kept after a write in one batch: the last value is put");
  // While a batch syncs, its rows answer readers outside a job only when `fresh` accepts
  // them; else `load` does. The next batch's jobs see its rows.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const chained = env.chained.bind(env);
  env.chained = (fn, after) => {
    const c = chained(fn, after);
    return { mark: c.mark, committed: gate.then(() => c.committed) };
  };
  const syncing = q.run(() => q.keep(rows, "kept", 3), true);
  await new Promise((r) => setImmediate(r));
  const seen = [q.read(rows, "kept", () => -1), q.read(rows, "kept", () => -1, (v) => v === 3)];
  const next = q.run(() => q.read(rows, "kept", () => -1), true);
  release();
  await syncing;
  assert.deepEqual([...seen, await next], [-1, 3, 3]);
  await env.close();
});

Deno.test("CommitQueue: a staged job needs no child transaction; when it throws its puts and rows are dropped, and a later unstaged job of the batch sees the earlier puts in the store", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const q = env.commits;
  let children = 0;
  const child = env.root.childTransaction.bind(env.root);
  env.root.childTransaction = ((fn: () => unknown) => (children++, child(fn))) as typeof child;
  const jobs = [
    q.run(() => (q.put(rows, "a", 1), q.write(rows, "ra", 1)), true),
    q.run(() => {
      q.put(rows, "b", 2);
      q.write(rows, "rb", 2);
      throw new Error("refused");
    }, true),
    q.run(() => rows.get("a"), false),
  ];
  const settled = await Promise.allSettled(jobs);
  assert.deepEqual(settled.map((s) => s.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.equal(children, 2, "one for the batch (StoreEnv.transaction), one for the unstaged job");
  assert.equal(
    (settled[2] as PromiseFulfilledResult<unknown>).value,
    1,
    "the unstaged job read the staged put",
  );
  assert.deepEqual([rows.get("a"), rows.get("ra"), rows.get("b"), rows.get("rb")], [
    1,
    1,
    undefined,
    undefined,
  ]);
  await env.close();
});

Deno.test("CommitQueue: a job that throws after restaging rows an earlier job of its batch staged leaves those rows as the earlier job left them", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const q = env.commits;
  for (const staged of [true, false]) {
    const [w, k] = [`written-${staged}`, `kept-${staged}`];
    const seen: (number | undefined)[] = [];
    const jobs = [
      q.run(() => (q.write(rows, w, 1), q.keep(rows, k, 1)), staged),
      q.run(() => {
        q.write(rows, w, 2);
        q.keep(rows, k, 2);
        q.write(rows, w, 3);
        throw new Error("refused");
      }, staged),
      q.run(
        () => (seen.push(q.read(rows, w), q.read(rows, k)), q.write(rows, `after-${staged}`, 4)),
        staged,
      ),
    ];
    const settled = await Promise.allSettled(jobs);
    assert.deepEqual(settled.map((s) => s.status), ["fulfilled", "rejected", "fulfilled"]);
    assert.deepEqual(seen, [1, 1], "the next job of the batch saw the earlier job's rows");
    assert.deepEqual([q.read(rows, w), q.read(rows, k), q.read(rows, `after-${staged}`)], [
      1,
      1,
      4,
    ]);
    assert.deepEqual(
      [rows.get(w), rows.get(k), rows.get(`after-${staged}`)],
      [1, undefined, 4],
      "a kept row is never put",
    );
  }
  await env.close();
});

Deno.test("StoreEnv.batch(): the rows it puts commit together and are durable when it resolves; it reads the store as last committed", async () => {
  const { env, path } = tempStore();
  const rows = env.db<number>("rows");
  await env.transaction(() => rows.put("a", 1));
  const result = await env.batch(() => {
    const before = rows.get("a");
    rows.put("a", 2);
    rows.put("b", 3);
    rows.remove("gone");
    return [before, rows.get("a")];
  });
  assert.deepEqual(result, [1, 1], "fn sees the committed store, not its own queued puts");
  assert.deepEqual([rows.get("a"), rows.get("b")], [2, 3]);
  await env.close();
  const reopened = new StoreEnv(path);
  assert.deepEqual([reopened.db<number>("rows").get("a"), reopened.db<number>("rows").get("b")], [
    2,
    3,
  ]);
  await reopened.close();
});

Deno.test("CommitQueue: past its bound of interned keys (100k) a batch still reads what it staged, and later reads see the store, kept rows derived again", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const derived = env.db<number>("derived");
  const q = env.commits;
  const n = 100_010;
  // One batch interns more keys than the bound: nothing it staged may be lost mid-batch.
  const seen = await q.run(() => {
    q.keep(derived, "kept", 7);
    for (let i = 0; i < n; i++) q.write(rows, `k${i}`, i, 16);
    return [q.read(rows, "k0"), q.read(rows, `k${n - 1}`), q.read(derived, "kept")];
  }, true);
  assert.deepEqual(seen, [0, n - 1, 7]);
  assert.equal(rows.get("k0"), 0);
  assert.equal(rows.get(`k${n - 1}`), n - 1);
  // The next batch starts on a fresh cache: a kept row (never put) is derived again by `load`.
  const next = await q.run(() => {
    q.write(rows, "k5", (q.read(rows, "k5") ?? -1) + 100);
    return [q.read(rows, "k5"), q.read(derived, "kept", () => 42), q.read(rows, "k99999")];
  }, true);
  assert.deepEqual(next, [105, 42, 99_999]);
  // Reads outside any batch past the bound drop the interned keys at once, and stay right.
  for (let i = 0; i < n; i++) assert.equal(q.read(rows, `r${i}`), undefined);
  assert.equal(q.read(rows, "k5"), 105);
  assert.equal(q.read(rows, `k${n - 1}`), n - 1);
  await env.close();
});

Deno.test("CommitQueue: the next batch is prepared and handed to the store while one commits, reads its rows, and is answered only after it", async () => {
  const { env } = tempStore();
  const rows = env.db<number>("rows");
  const q = env.commits;
  const held = holdBatches(env);
  const add = () =>
    q.run(() => q.write(rows, "n", (q.read(rows, "n") ?? 0) + 1) ?? q.read(rows, "n"), true);
  const first = [add(), add()];
  await new Promise((r) => setImmediate(r));
  assert.equal(held.handed(), 1);
  const second = [add(), add(), add()];
  await new Promise((r) => setImmediate(r));
  assert.equal(
    held.handed(),
    2,
    "the second batch was handed over while the first was not answered",
  );
  held.release(1);
  assert.equal(
    await settledYet(Promise.race(second)),
    false,
    "a batch is not answered before the one before it",
  );
  held.release(0);
  assert.deepEqual(
    await Promise.all([...first, ...second]),
    [1, 2, 3, 4, 5],
    "the second batch counted on from the first's rows",
  );
  assert.equal(rows.get("n"), 5);
  assert.equal(q.read(rows, "n"), 5);
  await env.close();
});

Deno.test("CommitQueue: when a commit fails, the batch prepared on it while it was committing is not stored or answered, and runs again on the store as committed", async () => {
  const { env, path } = tempStore();
  const log = new OrderedLog(env, "log", { staged: true });
  const rows = env.db<number>("rows");
  const q = env.commits;
  const held = holdBatches(env, 1);
  const append = (i: number) =>
    log.append("s", (head) => ({ entries: [{ i, head }], result: head }));
  const runs: number[] = [];
  const add = (tag: number) =>
    q.run(() => {
      runs.push(tag);
      q.write(rows, "n", (q.read(rows, "n") ?? 0) + 1);
      return q.read(rows, "n");
    }, true);
  const ok = [append(0), add(0)];
  await new Promise((r) => setImmediate(r));
  held.release(0);
  assert.deepEqual(await Promise.all(ok), [{ position: 1, count: 1, result: 0 }, 1]);
  // Batch 1 fails (the store skips it); batch 2 is handed over while batch 1 is committing,
  // prepared on batch 1's rows.
  const failing = [append(1), add(1)];
  await new Promise((r) => setImmediate(r));
  const chainedOn = [append(2), add(2)];
  await new Promise((r) => setImmediate(r));
  assert.equal(held.handed(), 3, "batch 2 was handed over before batch 1 settled");
  assert.deepEqual(runs, [0, 1, 2]);
  held.release(2);
  assert.equal(
    await settledYet(Promise.race(chainedOn)),
    false,
    "batch 2 is not answered before batch 1",
  );
  held.release(1);
  for (const p of failing) {
    await assert.rejects(
      p,
      (err: unknown) =>
        err instanceof StorageUnavailableError && err.reason === "storage unavailable: injected",
    );
  }
  // Batch 2 was skipped by the store (chained on batch 1) and its jobs run again as batch 3.
  await new Promise((r) => setImmediate(r));
  assert.equal(held.handed(), 4);
  assert.deepEqual(runs, [0, 1, 2, 2], "batch 2's job ran again");
  held.release(3);
  assert.deepEqual(
    await Promise.all(chainedOn),
    [{ position: 2, count: 1, result: 1 }, 2],
    "on the stored state, not batch 1's",
  );
  assert.deepEqual(log.after<{ i: number }>("s", 0).map((r) => [r.position, r.entry.i]), [[1, 0], [
    2,
    2,
  ]]);
  assert.equal(rows.get("n"), 2);
  const next = [append(3), add(3)];
  await new Promise((r) => setImmediate(r));
  held.release(4);
  assert.deepEqual(await Promise.all(next), [{ position: 3, count: 1, result: 2 }, 3]);
  await env.close();
  const reopened = new StoreEnv(path);
  const fresh = new OrderedLog(reopened);
  assert.deepEqual(fresh.after<{ i: number }>("s", 0).map((r) => [r.position, r.entry.i]), [
    [1, 0],
    [2, 2],
    [3, 3],
  ]);
  assert.equal(reopened.db<number>("rows").get("n"), 3);
  await reopened.close();
});
