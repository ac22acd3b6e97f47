import assert from "node:assert/strict";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempStore } from "../helpers/temp_store.ts";

const one = <E>(entry: E) => () => ({ entries: [entry], result: undefined });

Deno.test("OrderedLog.append() gives contiguous positions from 1 under many concurrent appends", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const results = await Promise.all(
    Array.from({ length: 500 }, (_, i) => log.append(`s${i % 3}`, one({ i }))),
  );
  for (const s of ["s0", "s1", "s2"]) {
    const positions = log.after(s, 0).map((r) => r.position);
    assert.deepEqual(positions, Array.from({ length: positions.length }, (_, i) => i + 1));
    assert.equal(log.head(s), positions.length);
  }
  assert.equal(results.length, 500);
  assert.equal(log.head("never"), 0);
  await env.close();
});

Deno.test("OrderedLog.append() stores derived state atomically and writes nothing when prepare throws", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const state = env.db<number>("state");
  const add = (n: number) => () => {
    const cur = state.get("x") ?? 0;
    if (cur + n < 0) throw new Error("would go negative");
    return { entries: [{ n }], apply: () => state.put("x", cur + n), result: cur + n };
  };
  assert.equal((await log.append("a", add(5))).result, 5);
  await assert.rejects(log.append("a", add(-10)), /negative/);
  assert.equal((await log.append("a", add(2))).result, 7);
  assert.equal(state.get("x"), 7);
  assert.deepEqual(log.after("a", 0).map((r) => [r.position, r.entry]), [[1, { n: 5 }], [2, {
    n: 2,
  }]]);
  await env.close();
});

Deno.test("OrderedLog.append() publishes in position order and several entries get contiguous positions", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const seen: number[] = [];
  const publish = (first: number, entries: unknown[]) =>
    entries.forEach((_, i) => seen.push(first + i));
  await Promise.all(
    Array.from(
      { length: 100 },
      (_, i) => log.append("s", () => ({ entries: i % 2 ? [1, 2] : [1], result: 0 }), publish),
    ),
  );
  assert.deepEqual(seen, Array.from({ length: 150 }, (_, i) => i + 1));
  await env.close();
});

Deno.test("OrderedLog.whenPublished() runs once the position is published, at once if it already is", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const order: string[] = [];
  const pending = log.append("s", one("a"), () => order.push("published 1"));
  log.whenPublished("s", 1, () => order.push("waiter 1"));
  await pending;
  log.whenPublished("s", 1, () => order.push("immediate"));
  assert.deepEqual(order, ["published 1", "waiter 1", "immediate"]);
  await env.close();
});

Deno.test("OrderedLog.purge() returns a stream to never-written and positions restart at 1", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  for (let i = 0; i < 5; i++) await log.append("s", one(i));
  await log.append("other", one("keep"));
  await log.purge("s");
  assert.equal(log.head("s"), 0);
  assert.deepEqual(log.after("s", 0), []);
  assert.equal((await log.append("s", one("again"))).position, 1);
  assert.equal(log.head("other"), 1);
  await env.close();
});

Deno.test("OrderedLog.trim() keeps the newest entries by count and age; the head never moves", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  for (let i = 0; i < 10; i++) await log.append("s", one(i));
  assert.equal(await log.trim("s", { maxCount: 4 }), 6);
  assert.equal(log.first("s"), 7);
  assert.equal(log.head("s"), 10);
  assert.deepEqual(log.after("s", 0).map((r) => r.position), [7, 8, 9, 10]);
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(await log.trim("s", { maxAgeMs: 1 }), 4);
  assert.equal(log.first("s"), 11);
  assert.equal((await log.append("s", one("next"))).position, 11);
  await env.close();
});

Deno.test("OrderedLog.before() reads backwards and streams() lists by prefix", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  for (let i = 0; i < 5; i++) await log.append("app/a", one(i));
  await log.append("app/b", one(0));
  await log.append("zzz", one(0));
  assert.deepEqual(log.before("app/a", 4, 2).map((r) => r.position), [3, 2]);
  assert.deepEqual(log.streams("app/"), ["app/a", "app/b"]);
  await env.close();
});

Deno.test("OrderedLog data survives closing and reopening the environment", async () => {
  const { env, path } = tempStore();
  const log = new OrderedLog(env);
  for (let i = 0; i < 3; i++) await log.append("s", one(i));
  await env.close();
  const env2 = new StoreEnv(path);
  const log2 = new OrderedLog(env2);
  assert.equal(log2.head("s"), 3);
  assert.deepEqual(log2.after("s", 1).map((r) => r.entry), [1, 2]);
  await env2.close();
});

Deno.test("OrderedLog.append() leaves nothing behind when apply throws after entries were staged", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const state = env.db<string>("state");
  await log.append("s", one({ n: 1 }));
  // Concurrent appends share one LMDB commit: the failing one must not take the others down,
  // and must not leave its staged entries, its head move or its derived writes behind.
  const results = await Promise.allSettled([
    log.append("s", one({ n: 2 })),
    log.append("s", () => ({
      entries: [{ n: "bad" }, { n: "bad" }],
      apply: () => {
        state.put("half", "written");
        state.put("x".repeat(3000), "key too long"); // throws inside LMDB
      },
      result: undefined,
    })),
    log.append("s", one({ n: 3 })),
  ]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.equal(state.get("half"), undefined);
  assert.equal(log.head("s"), 3);
  assert.deepEqual(log.after("s", 0).map((r) => [r.position, r.entry]), [
    [1, { n: 1 }],
    [2, { n: 2 }],
    [3, { n: 3 }],
  ]);
  await env.close();
});

Deno.test("OrderedLog.purge() starts a new epoch, stored with the stream; appends restart at 1", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  await log.append("s", one({ n: 1 }));
  assert.equal(log.epoch("s"), "0");
  let published = "";
  const epoch = await log.purge("s", undefined, (e) => (published = e));
  assert.match(epoch, /^[0-9a-f]{8}$/);
  assert.equal(published, epoch);
  assert.equal(log.epoch("s"), epoch);
  assert.equal((await log.append("s", one({ n: 2 }))).position, 1);
  assert.notEqual(await log.purge("s"), epoch, "every purge starts another epoch");
  // A second OrderedLog over the same environment reads it from storage, not from memory.
  const other = new OrderedLog(env);
  assert.equal(other.epoch("s"), log.epoch("s"));
  assert.equal(other.head("s"), 0);
  await env.close();
});

Deno.test("OrderedLog.append(): settle makes what the append resolves with, after the entries are durable and published; an empty append settles at the head", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const published: number[] = [];
  await log.append("s", one("a"));
  const settled = await log.append(
    "s",
    () => ({ entries: ["b", "c"], result: "r" }),
    (first) => published.push(first),
    (position, count, result) => {
      // Settled after the commit: the entries are stored and published.
      assert.deepEqual(log.after("s", 1).map((e) => e.entry), ["b", "c"]);
      assert.deepEqual(published, [2]);
      return { position, count, result };
    },
  );
  assert.deepEqual(settled, { position: 2, count: 2, result: "r" });
  assert.deepEqual(
    await log.append("s", () => ({ entries: [], result: 7 }), undefined, (p, n, r) => [p, n, r]),
    [3, 0, 7],
  );
  // A settle that throws rejects the append (its entries are durable: it ran after the commit).
  await assert.rejects(
    log.append("s", one("d"), undefined, () => {
      throw new Error("reply failed");
    }),
    /reply failed/,
  );
  assert.equal(log.head("s"), 4);
  await env.close();
});
