// Object state is derived from the log: checkpoints every CHECKPOINT_EVERY entries, the entries
// after them folded in on a cache miss. Real LMDB in temp dirs; restarts reopen the same files.
import assert from "node:assert/strict";
import { open } from "lmdb";
import { Hub } from "../../lib/hub/hub.ts";
import { CHECKPOINT_EVERY, type ObjectRef, ObjectStore } from "../../lib/objects/store.ts";
import type { Op } from "../../lib/objects/ops.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempStore } from "../helpers/temp_store.ts";

/** An ObjectStore over `env`, as the server builds it. */
function objects(env: StoreEnv): ObjectStore {
  return new ObjectStore(env, new Hub(), new OrderedLog(env, "objects", { staged: true }));
}

const ref = (key: string): ObjectRef => ({ appId: "app", appKey: "key", type: "t", key });

/** The checkpoint row as stored for `key` (its state and the position it reflects). */
function storedCheckpoint(
  env: StoreEnv,
  key: string,
): { at?: number; state: Record<string, unknown> } | undefined {
  return env.db<{ at?: number; state: Record<string, unknown> }>("objects:state").get(
    `app/t/${key}`,
  );
}

Deno.test("ObjectStore: state and log_id equal a model of every write, live, from checkpoints after a restart, and stored rows lag the head by less than CHECKPOINT_EVERY", async () => {
  const { env, path } = tempStore();
  const store = objects(env);
  const keys = ["plain", "café ☕", "k:with:colons"];
  const model = new Map<string, { state: Record<string, unknown>; log_id: number }>(
    keys.map((k) => [k, { state: {}, log_id: 0 }]),
  );
  // Waves of concurrent writes: each wave's writes share batches and overlap earlier syncs.
  for (let wave = 0; wave < 8; wave++) {
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 25; i++) {
      for (const k of keys) {
        const m = model.get(k)!;
        const slot = `s${(wave * 7 + i) % 5}`;
        const ops: Op[] = i % 9 === 4
          ? [{ op: "delete", key: slot }]
          : i % 3 === 0
          ? [{ op: "set", key: slot, value: { wave, i, text: "é😀" } }]
          : [{ op: "set", key: slot, value: i }, { op: "increment", key: "n", by: 1 }];
        for (const op of ops) {
          if (op.op === "delete") delete m.state[op.key];
          else if (op.op === "set") m.state[op.key] = op.value;
          else if (op.op === "increment") {
            m.state[op.key] = ((m.state[op.key] as number) ?? 0) + op.by;
          }
        }
        m.log_id++;
        writes.push(store.write(ref(k), ops, ops.length > 1));
      }
    }
    await Promise.all(writes);
    for (const k of keys) {
      assert.deepEqual(store.snapshot(ref(k)), model.get(k), `${k} after wave ${wave}`);
    }
  }
  // One more write at a time until the stored checkpoint is behind the head, so the restart
  // below has entries to fold (a write right after a checkpoint stores none).
  const plain = model.get("plain")!;
  for (let i = 0; i < 2 && storedCheckpoint(env, "plain")!.at === plain.log_id; i++) {
    await store.write(ref("plain"), [{ op: "increment", key: "n", by: 1 }], false);
    plain.state.n = (plain.state.n as number) + 1;
    plain.log_id++;
  }
  assert.ok(
    storedCheckpoint(env, "plain")!.at! < plain.log_id,
    "plain: the checkpoint is behind the head",
  );
  for (const k of keys) {
    const head = model.get(k)!.log_id;
    const row = storedCheckpoint(env, k)!;
    assert.ok(
      row.at! <= head && head - row.at! < CHECKPOINT_EVERY,
      `${k}: checkpoint at ${row.at}, head ${head}`,
    );
  }
  await env.close();

  const reopened = new StoreEnv(path);
  const fresh = objects(reopened);
  for (const k of keys) {
    assert.deepEqual(fresh.snapshot(ref(k)), model.get(k), `${k} after a restart`);
    assert.deepEqual(fresh.slot(ref(k), "n"), model.get(k)!.state.n ?? null);
  }
  const m = model.get("café ☕")!;
  const after = await fresh.write(ref("café ☕"), [{ op: "increment", key: "n", by: 5 }], false);
  assert.equal(after.log_id, m.log_id + 1);
  assert.deepEqual(fresh.snapshot(ref("café ☕")).state.n, (m.state.n as number) + 5);
  await reopened.close();
});

Deno.test("ObjectStore: a commit that fails in flight leaves the next write on the stored state, not on the failed one's", async () => {
  const { env } = tempStore();
  const store = objects(env);
  for (let i = 1; i <= 40; i++) {
    await store.write(ref("o"), [{ op: "set", key: "v", value: i }], false);
  }
  // The next commit fails with nothing written: it is chained on a batch that never committed.
  const chained = env.chained.bind(env);
  let fail = true;
  env.chained = (fn, after) => {
    if (!fail) return chained(fn, after);
    fail = false;
    const c = chained(fn, -1);
    return {
      mark: c.mark,
      committed: c.committed.then(() => {
        throw new Error("storage refused the commit");
      }),
    };
  };
  const refused = store.write(ref("o"), [{ op: "set", key: "v", value: "lost" }], false);
  await new Promise((r) => setImmediate(r)); // that batch is now committing
  const next = store.write(ref("o"), [{ op: "increment", key: "n", by: 1 }], false);
  await assert.rejects(refused, /storage refused the commit/);
  assert.deepEqual(await next, { log_id: 41, ops: [{ op: "set", key: "n", value: 1 }] });
  assert.deepEqual(store.snapshot(ref("o")), { state: { v: 40, n: 1 }, log_id: 41 });
  await env.close();
});

Deno.test("ObjectStore reads what releases before 2026-11-25 stored: a record with no position, map entries and head rows on every write", async () => {
  const { path } = tempStore();
  const old = open({ path, maxDbs: 64, encoding: "msgpack", sharedStructuresKey: undefined });
  const opt = { keyEncoding: "ordered-binary", encoding: "msgpack" } as const;
  const entries = old.openDB({ name: "objects:entries", ...opt });
  const meta = old.openDB({ name: "objects:meta", ...opt });
  const records = old.openDB({ name: "objects:state", ...opt });
  await old.transaction(() => {
    entries.put(["app/t/old", 1], {
      t: 1,
      e: { batch: false, ops: [{ op: "set", key: "a", value: 1 }] },
    });
    entries.put(["app/t/old", 2], {
      t: 2,
      e: {
        batch: true,
        ops: [{ op: "set", key: "b", value: "é" }, { op: "delete", key: "a", value: null }],
      },
    });
    meta.put("app/t/old", { head: 2, first: 1 });
    records.put("app/t/old", { state: { b: "é" }, sizes: { b: 5 }, total: 5 });
  });
  await old.close();
  const env = new StoreEnv(path);
  const store = objects(env);
  assert.deepEqual(store.snapshot(ref("old")), { state: { b: "é" }, log_id: 2 });
  assert.deepEqual(store.items(ref("old"), 0), [
    { op: "set", key: "a", value: 1, log_id: 1 },
    { op: "set", key: "b", value: "é", log_id: 2 },
    { op: "delete", key: "a", value: null, log_id: 2 },
  ]);
  for (let i = 0; i < 3; i++) {
    await store.write(ref("old"), [{ op: "increment", key: "n", by: 1 }], false);
  }
  assert.equal(
    storedCheckpoint(env, "old")!.at,
    3,
    "the first write after an upgrade stores a checkpoint",
  );
  await env.close();
  const reopened = new StoreEnv(path);
  assert.deepEqual(objects(reopened).snapshot(ref("old")), { state: { b: "é", n: 3 }, log_id: 5 });
  await reopened.close();
});

Deno.test("ObjectStore: slot names that are Object.prototype members keep sizes and totals exact", async () => {
  const { env } = tempStore();
  const store = objects(env);
  await store.write(ref("p"), [{ op: "set", key: "constructor", value: 1 }, {
    op: "set",
    key: "toString",
    value: "x",
  }], true);
  await store.write(ref("p"), [{ op: "delete", key: "constructor" }], false);
  // Up to the first stored checkpoint.
  for (let i = 3; i <= CHECKPOINT_EVERY; i++) {
    await store.write(ref("p"), [{ op: "increment", key: "n", by: 1 }], false);
  }
  const row = env.db<{ at: number; total: number }>("objects:state").get("app/t/p")!;
  assert.equal(row.at, CHECKPOINT_EVERY);
  assert.ok(Number.isFinite(row.total), `total is ${row.total}`);
  assert.deepEqual(store.snapshot(ref("p")), {
    state: { toString: "x", n: CHECKPOINT_EVERY - 2 },
    log_id: CHECKPOINT_EVERY,
  });
  await env.close();
});

Deno.test("ObjectStore: an object with fewer than CHECKPOINT_EVERY entries stores no checkpoint; after a restart its state folds from the empty state", async () => {
  const { env, path } = tempStore();
  const store = objects(env);
  for (let i = 1; i < CHECKPOINT_EVERY; i++) {
    await store.write(ref("short é"), [{ op: "increment", key: "n", by: i }], false);
  }
  assert.equal(storedCheckpoint(env, "short é"), undefined);
  await env.close();
  const reopened = new StoreEnv(path);
  const fresh = objects(reopened);
  const sum = (CHECKPOINT_EVERY - 1) * CHECKPOINT_EVERY / 2;
  assert.deepEqual(fresh.snapshot(ref("short é")), {
    state: { n: sum },
    log_id: CHECKPOINT_EVERY - 1,
  });
  await fresh.write(ref("short é"), [{ op: "increment", key: "n", by: 1 }], false);
  assert.deepEqual(storedCheckpoint(reopened, "short é"), {
    ...storedCheckpoint(reopened, "short é"),
    at: CHECKPOINT_EVERY,
    state: { n: sum + 1 },
  });
  await reopened.close();
});
