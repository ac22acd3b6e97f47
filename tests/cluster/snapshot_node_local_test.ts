// A snapshot written by a node of an earlier version lists no node-local databases, yet holds
// that node's rows of them (its queued webhooks). A node restored from one must not keep them:
// each database it declares node-local is emptied on its first declaration, and only then (a
// restart keeps what the node queued itself). A snapshot that lists them has them emptied at
// restore. Real LMDB stores; the snapshot is served by a stand-in for the JetStream link.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ClusterLink } from "../../lib/cluster/link.ts";
import { NODE_LOCAL_DB, POSITION_DB, ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import { restoreIfBehind } from "../../lib/cluster/snapshots.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** Writes another node's store at `path`: position 40, a replicated row, an outbox row; the
 * node-local list only when `listed`. */
async function otherNodeStore(path: string, listed: boolean): Promise<void> {
  const store = new StoreEnv(path, false);
  try {
    await store.transaction(() => {
      store.db<number>(POSITION_DB).put("applied", 40);
      store.db("objects").put("shared", "row");
      store.db("test:outbox").put("queued", "another node's webhook");
      if (listed) store.db(NODE_LOCAL_DB).put("test:outbox", true);
    });
  } finally {
    await store.close();
  }
}

/** A link whose log starts at 30 and whose object store holds the snapshot file `file`. */
function linkServing(file: string): ClusterLink {
  const bytes = readFileSync(file);
  const link = {
    nodeId: "restored",
    bounds: () => Promise.resolve({ first: 30, last: 50 }),
    objectStore: () =>
      Promise.resolve({
        get: () =>
          Promise.resolve({
            info: { description: "40" },
            data: new ReadableStream<Uint8Array>({
              start(c) {
                c.enqueue(new Uint8Array(bytes));
                c.close();
              },
            }),
            error: Promise.resolve(null),
          }),
      }),
  };
  return link as unknown as ClusterLink;
}

/** Restores the snapshot at `file` over a new node's store; returns the store's path. */
async function restored(file: string): Promise<string> {
  const path = join(tempDir("sb-restored-"), "store.mdb");
  await restoreIfBehind(linkServing(file), path);
  return path;
}

/** Opens the store at `path` as a node would (no start: nothing is applied) and declares the
 * outbox node-local; returns its rows and the replicated rows. */
async function declared(path: string, write?: [string, string]) {
  const env = new ReplicatedEnv(path, { nodeId: "restored" } as unknown as ClusterLink, {
    writeDeadlineMs: 1000,
  });
  try {
    const outbox = env.nodeLocal<string>("test:outbox");
    if (write) await env.root.transaction(() => outbox.put(write[0], write[1]));
    return {
      outbox: [...outbox.getRange()].map(({ key, value }) => [key, value]),
      objects: [...env.db("objects").getRange()].map(({ key, value }) => [key, value]),
    };
  } finally {
    await env.close();
  }
}

Deno.test("cluster snapshots: a snapshot without the node-local list (an earlier version's) leaves no other node's outbox rows", async () => {
  const file = join(tempDir("sb-old-snapshot-"), "snapshot.mdb");
  await otherNodeStore(file, false);
  const path = await restored(file);
  const first = await declared(path, ["mine", "queued here"]);
  assert.deepEqual(first.objects, [["shared", "row"]], "the replicated rows are restored");
  assert.deepEqual(
    first.outbox,
    [["mine", "queued here"]],
    "the other node's queued webhook is gone",
  );
  // A restart declares it again: what this node queued itself stays.
  const again = await declared(path);
  assert.deepEqual(again.outbox, [["mine", "queued here"]]);
});

Deno.test("cluster snapshots: a snapshot that lists its node-local databases has them emptied at restore", async () => {
  const file = join(tempDir("sb-new-snapshot-"), "snapshot.mdb");
  await otherNodeStore(file, true);
  const path = await restored(file);
  const got = await declared(path);
  assert.deepEqual(got.objects, [["shared", "row"]]);
  assert.deepEqual(got.outbox, []);
});
