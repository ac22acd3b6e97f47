// The storage seam (lib/store/storage.ts): the local store's `nodeLocal`, `DirectCommits`
// (the replicated store's commit path), the typed changes read from another node's write set
// (lib/cluster/log_changes.ts), and `OrderedLog` publishing such changes in position order.
import assert from "node:assert/strict";
import { DirectCommits } from "../../lib/store/direct_commits.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import type { StoreEnv } from "../../lib/store/env.ts";
import type { Storage } from "../../lib/store/storage.ts";
import { logDbNames } from "../../lib/store/log_layout.ts";
import { LogChangeFeed, streamChanges, type Write } from "../../lib/cluster/log_changes.ts";
import { tempStore } from "../helpers/temp_store.ts";

/** `env` as a store that other nodes write too: `DirectCommits`, and `feed` telling changes. */
function withRemote(env: StoreEnv): { storage: Storage; feed: LogChangeFeed } {
  const feed = new LogChangeFeed();
  const storage: Storage = {
    db: (name) => env.db(name),
    nodeLocal: (name) => env.nodeLocal(name),
    transaction: (fn) => env.transaction(fn),
    commits: new DirectCommits(env),
    remote: feed,
    unavailable: () => env.unavailable(),
    drain: () => env.drain(),
    flushed: () => env.flushed(),
    backup: (path) => env.backup(path),
    close: () => env.close(),
  };
  return { storage, feed };
}

/** Applies `writes` as another node's, around one local commit, as `ReplicatedEnv` does. */
async function applyRemote(
  env: StoreEnv,
  feed: LogChangeFeed,
  writes: Write[],
  fail = false,
): Promise<void> {
  feed.applying(writes);
  try {
    await env.transaction(() => {
      for (const w of writes) {
        if (w[0] === 0) env.db(w[1]).put(w[2], w[3]);
        else env.db(w[1]).remove(w[2]);
      }
      if (fail) throw new Error("refused");
    });
  } catch {
    feed.applied(writes, false);
    return;
  }
  feed.applied(writes, true);
}

const names = logDbNames("log");
const entry = (
  stream: string,
  position: number,
  e: unknown,
): Write => [0, names.entries, [stream, position], [1000 + position, e]];
const head = (stream: string, h: number): Write => [0, names.meta, stream, { head: h, first: 1 }];

Deno.test("StoreEnv.nodeLocal(): on one node a node-local database is an ordinary one", async () => {
  const { env } = tempStore();
  await env.transaction(() => env.nodeLocal<number>("outbox").put("k", 1));
  assert.equal(env.db<number>("outbox").get("k"), 1);
  await env.close();
});

Deno.test("DirectCommits: each job is its own transaction; reads go to the store; write, keep and put store at once", async () => {
  const { env } = tempStore();
  const commits = new DirectCommits(env);
  const db = env.db<number>("rows");
  await commits.run(() => {
    commits.write(db, "a", 1);
    commits.keep(db, "b", 2);
    commits.put(db, "c", 3);
    commits.track(db, "a", 1);
    assert.equal(commits.read(db, "a"), 1, "a read inside the job sees the row written");
  });
  assert.deepEqual([db.get("a"), db.get("b"), db.get("c")], [1, 2, 3]);
  assert.equal(commits.read(db, "a", () => 42), 42, "read asks load, never a cache");
  await assert.rejects(
    commits.run(() => {
      commits.write(db, "a", undefined);
      throw new Error("no");
    }),
    /no/,
  );
  assert.equal(db.get("a"), 1, "a job that throws leaves nothing");
  await commits.run(() => commits.write(db, "a", undefined));
  assert.equal(db.get("a"), undefined);
  await env.close();
});

Deno.test("streamChanges(): one change per stream whose head or epoch is written, entries in position order, other logs' rows ignored", () => {
  const changes = streamChanges(names, [
    entry("s", 3, "c"),
    entry("s", 2, "b"),
    head("s", 3),
    [0, "other:entries", ["s", 9], [0, "x"]],
    [0, "objects:records", "s", {}],
    head("t", 5), // a trim: head row only
    [1, names.entries, ["t", 1]],
    [1, names.meta, "u"], // a purge: head removed, entries removed, new epoch
    [1, names.entries, ["u", 1]],
    [0, names.epochs, "u", "e1"],
    entry("u", 1, "fresh"),
    head("u", 1),
  ]);
  assert.deepEqual(changes, [
    {
      stream: "s",
      appended: [{ position: 2, time: 1002, entry: "b" }, { position: 3, time: 1003, entry: "c" }],
    },
    { stream: "t", appended: [] },
    { stream: "u", purged: "e1", appended: [{ position: 1, time: 1001, entry: "fresh" }] },
  ]);
  assert.deepEqual(streamChanges(names, [[0, "objects:records", "s", {}]]), []);
});

Deno.test("OrderedLog: another node's appends, told as typed changes, are published in position order after this node's, and hold joins until then", async () => {
  const { env } = tempStore();
  const { storage, feed } = withRemote(env);
  const log = new OrderedLog(storage);
  const seen: string[] = [];
  log.follow({
    appended: (stream, first, entries) => seen.push(`${stream}@${first}:${entries.join(",")}`),
    purged: (stream, epoch) => seen.push(`${stream} purged ${epoch}`),
  });
  const local: string[] = [];
  await log.append(
    "s",
    () => ({ entries: ["a"], result: undefined }),
    (first, entries) => local.push(`s@${first}:${entries.join(",")}`),
  );
  assert.deepEqual(local, ["s@1:a"]);

  const writes = [entry("s", 3, "c"), entry("s", 2, "b"), head("s", 3)];
  feed.applying(writes);
  let joined = false;
  log.whenPublished("s", 3, () => (joined = true));
  assert.equal(joined, false, "a join waits for the other node's entries to be published");
  await env.transaction(() => {
    for (const w of writes) if (w[0] === 0) env.db(w[1]).put(w[2], w[3]);
  });
  feed.applied(writes, true);
  assert.equal(joined, true);
  assert.deepEqual(seen, ["s@2:b,c"]);
  assert.equal(log.head("s"), 3);
  assert.deepEqual(log.after("s", 0).map((r) => r.entry), ["a", "b", "c"]);

  // A failed apply publishes nothing and holds nothing: a purge here (which waits for every
  // append of the stream under way) goes through.
  await applyRemote(env, feed, [entry("s", 4, "d"), head("s", 4)], true);
  assert.deepEqual(seen, ["s@2:b,c"]);
  assert.equal(log.head("s"), 3);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise((
    _,
    reject,
  ) => (timer = setTimeout(() => reject(new Error("purge held")), 5000)));
  const local1 = await Promise.race([log.purge("s"), stuck]).finally(() => clearTimeout(timer));
  assert.equal(log.epoch("s"), local1);

  // A purge on the other node: followers are told the new epoch, positions restart.
  await applyRemote(env, feed, [
    [1, names.meta, "s"],
    ...[1, 2, 3].map((p): Write => [1, names.entries, ["s", p]]),
    [0, names.epochs, "s", "e2"],
  ]);
  assert.deepEqual(seen, ["s@2:b,c", "s purged e2"]);
  assert.equal(log.epoch("s"), "e2");
  assert.equal(log.head("s"), 0);
  await log.append(
    "s",
    () => ({ entries: ["again"], result: undefined }),
    (first) => local.push(`s@${first}`),
  );
  assert.deepEqual(local, ["s@1:a", "s@1"]);
  await env.close();
});
