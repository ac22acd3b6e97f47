// The storage seam's contract (`Storage`, `Table`, `Commits`: lib/store/), run alike against
// both stores: one node's LMDB environment (`StoreEnv`) and the replicated store
// (`ReplicatedEnv`) over the in-memory stand-in of the JetStream link the cluster tests use.
// Products hold only these interfaces, so what passes here holds for them on either store:
// - a transaction's rows read back once it resolved, removes remove, reads inside it see its
//   own writes;
// - a transaction that throws rejects with its error and writes nothing;
// - keys keep lmdb-js's ordered-binary order (numbers numerically, arrays element by element,
//   a shorter prefix first), and ranges honour start, end (excluded), reverse and limit;
// - transactions apply in the order they were issued, each seeing the ones before it;
// - the commit path (`Commits`) writes, keeps, puts and reads rows back;
// - a node-local table stores and reads rows like any other;
// - a resolved transaction's rows are there after the store is closed and reopened.
import assert from "node:assert/strict";
import { join } from "node:path";
import { StoreEnv } from "../../lib/store/env.ts";
import { ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import type { Storage } from "../../lib/store/storage.ts";
import type { Key } from "../../lib/store/table.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { fakeStream } from "../cluster/fake_link.ts";

/** A store of one kind on a fresh temp dir: `open` opens it, again on the same dir (and, for
 * the replicated store, the same stream) after a close. */
type Place = { open: () => Promise<Storage> };

/** The stores the contract runs against. */
const STORES: { name: string; place: () => Place }[] = [
  {
    name: "one node (StoreEnv)",
    place: () => {
      const path = join(tempDir("sb-contract-"), "store.mdb");
      return { open: () => Promise.resolve(new StoreEnv(path)) };
    },
  },
  {
    name: "replicated (ReplicatedEnv, in-memory link)",
    place: () => {
      const path = join(tempDir("sb-contract-repl-"), "store.mdb");
      const stream = fakeStream();
      return {
        open: async () => {
          const env = new ReplicatedEnv(path, stream.link, {
            writeDeadlineMs: 20_000,
          });
          await env.start(10_000);
          return env;
        },
      };
    },
  },
];

/** Runs `fn` on a fresh store of each kind, closing every store it opened even when `fn`
 * fails; `reopen` closes the store and opens it again on the same place. */
function contract(
  what: string,
  fn: (store: Storage, reopen: () => Promise<Storage>) => Promise<void>,
): void {
  for (const { name, place } of STORES) {
    Deno.test(`store contract [${name}]: ${what}`, async () => {
      const at = place();
      let store = await at.open();
      let open = true;
      const reopen = async () => {
        open = false;
        await store.close();
        store = await at.open();
        open = true;
        return store;
      };
      try {
        await fn(store, reopen);
      } finally {
        if (open) await store.close();
      }
    });
  }
}

contract("a transaction's rows read back once it resolved; remove removes", async (store) => {
  const t = store.db<{ n: number }>("contract:rows");
  const result = await store.transaction(() => {
    t.put(["a", 1], { n: 1 });
    t.put(["a", 2], { n: 2 });
    return "done";
  });
  assert.equal(result, "done");
  assert.deepEqual(t.get(["a", 1]), { n: 1 });
  assert.equal(t.doesExist(["a", 2]), true);
  assert.equal(t.get(["a", 3]), undefined);
  assert.equal(t.doesExist(["a", 3]), false);
  await store.transaction(() => void t.remove(["a", 1]));
  assert.equal(t.get(["a", 1]), undefined);
  assert.deepEqual(t.get(["a", 2]), { n: 2 });
});

contract("reads inside a transaction see its own writes", async (store) => {
  const t = store.db<number>("contract:own");
  await store.transaction(() => void t.put("kept", 1));
  const seen = await store.transaction(() => {
    t.put("new", 2);
    t.remove("kept");
    return {
      new: t.get("new"),
      kept: t.get("kept"),
      keys: [...t.getKeys()],
    };
  });
  assert.deepEqual(seen, { new: 2, kept: undefined, keys: ["new"] });
});

contract("a transaction that throws rejects with its error and writes nothing", async (store) => {
  const t = store.db<string>("contract:abort");
  await store.transaction(() => void t.put("before", "x"));
  await assert.rejects(
    store.transaction(() => {
      t.put("partial", "y");
      t.remove("before");
      throw new Error("refused by the job");
    }),
    /refused by the job/,
  );
  assert.equal(t.get("partial"), undefined);
  assert.equal(t.get("before"), "x");
  // The store takes writes after it.
  await store.transaction(() => void t.put("after", "z"));
  assert.equal(t.get("after"), "z");
});

contract(
  "keys keep ordered-binary order; ranges honour start, end, reverse and limit",
  async (store) => {
    const t = store.db<string>("contract:order");
    const keys: Key[] = [
      ["s", 10],
      ["s", 2],
      ["s", 1],
      ["s"],
      ["s", 2, "x"],
      ["t", 0],
      ["r", 99],
    ];
    await store.transaction(() => {
      for (const k of keys) t.put(k, JSON.stringify(k));
    });
    const all = [...t.getKeys()];
    // A one-element array is the same key as its element (it reads back as the element).
    assert.deepEqual(all, [
      ["r", 99],
      "s",
      ["s", 1],
      ["s", 2],
      ["s", 2, "x"],
      ["s", 10],
      ["t", 0],
    ]);
    // start included, end excluded.
    assert.deepEqual(
      [...t.getRange({ start: ["s", 1], end: ["s", 10] })].map(({ key, value }) => [key, value]),
      [[["s", 1], '["s",1]'], [["s", 2], '["s",2]'], [["s", 2, "x"], '["s",2,"x"]']],
    );
    // Reverse walks from start down to end (excluded).
    assert.deepEqual([...t.getKeys({ start: ["s", 10], end: ["s", 1], reverse: true })], [
      ["s", 10],
      ["s", 2, "x"],
      ["s", 2],
    ]);
    assert.deepEqual([...t.getKeys({ start: ["s"], end: ["t"], limit: 2 })], ["s", ["s", 1]]);
    assert.deepEqual(
      [...t.getRange({ start: ["t"], end: ["s"], reverse: true, limit: 1 })].map((e) => e.value),
      ['["s",10]'],
    );
    assert.deepEqual([...t.getRange({ start: ["u"] })], []);
  },
);

contract(
  "transactions apply in the order issued, each seeing the ones before it",
  async (store) => {
    const t = store.db<number[]>("contract:sequence");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.transaction(() => {
          const list = [...(t.get("list") ?? []), i];
          t.put("list", list);
          return list.length;
        })),
    );
    assert.deepEqual(results, Array.from({ length: 20 }, (_, i) => i + 1));
    assert.deepEqual(t.get("list"), Array.from({ length: 20 }, (_, i) => i));
  },
);

contract("the commit path writes, keeps, puts and reads rows back", async (store) => {
  const rows = store.db<string>("contract:commits");
  const log = store.db<string>("contract:commits-log");
  const { commits } = store;
  await commits.run(() => {
    commits.write(rows, "written", "w");
    commits.keep(rows, "kept", "k");
    commits.put(log, ["entry", 1], "e");
    assert.equal(commits.read(rows, "written"), "w", "the job reads its own write");
  });
  await commits.run(() => {
    assert.equal(commits.read(rows, "written"), "w");
    assert.equal(commits.read(rows, "kept", () => "k"), "k");
    commits.write(rows, "written", undefined);
  });
  await store.flushed();
  assert.equal(commits.read(rows, "written"), undefined);
  assert.equal(rows.get("written"), undefined);
  assert.equal(log.get(["entry", 1]), "e");
  // A job that throws rejects with its error; its writes are not made.
  await assert.rejects(
    commits.run(() => {
      commits.write(rows, "refused", "r");
      throw new Error("job failed");
    }),
    /job failed/,
  );
  assert.equal(commits.read(rows, "refused"), undefined);
});

contract("a node-local table stores and reads rows like any other", async (store) => {
  const local = store.nodeLocal<number>("contract:local");
  await store.transaction(() => {
    local.put(["q", 2], 2);
    local.put(["q", 1], 1);
  });
  assert.equal(local.get(["q", 1]), 1);
  assert.deepEqual([...local.getRange({ start: ["q"], end: ["r"] })].map((e) => e.value), [1, 2]);
  assert.equal(store.nodeLocal<number>("contract:local").get(["q", 2]), 2);
});

contract(
  "a resolved transaction's rows are there after the store is closed and reopened",
  async (store, reopen) => {
    const t = store.db<string>("contract:durable");
    await store.transaction(() => {
      t.put(["d", 1], "one");
      t.put(["d", 2], "two");
    });
    await store.transaction(() => void t.remove(["d", 1]));
    await store.commits.run(() => store.commits.write(t, ["d", 3], "three"));
    const again = await reopen();
    const u = again.db<string>("contract:durable");
    assert.deepEqual([...u.getRange({ start: ["d"], end: ["e"] })].map((e) => [e.key, e.value]), [
      [["d", 2], "two"],
      [["d", 3], "three"],
    ]);
  },
);
