// What a clustered node's ordered logs do when the node rebuilt its store (it applied the log
// differently from a majority of the nodes, lib/cluster/divergence/rebuild.ts), told through the storage
// seam's typed changes (`LogChangeFeed.replaced` / `unsure`), over real LMDB:
// - a join waiting for a position of the old store at the swap is dropped (it never replies
//   with the old store's snapshot), and live delivery of the stream goes on from the new
//   store's head, every later entry in order (it used to wait for a position of the old one);
// - a client resuming a stream at or past the first position the node may have published
//   another history at gets a reset (a full snapshot), never a replay; before it, or once the
//   time is over, a replay; on the written streams only, unless every stream is named.
import assert from "node:assert/strict";
import { DirectCommits } from "../../lib/store/direct_commits.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import type { StoreEnv } from "../../lib/store/env.ts";
import type { Storage } from "../../lib/store/storage.ts";
import { logDbNames } from "../../lib/store/log_layout.ts";
import { LogChangeFeed, rangesWritten, type Write } from "../../lib/cluster/log_changes.ts";
import { joinStream } from "../../lib/streams/join.ts";
import type { JoinContext } from "../../lib/socket/handler.ts";
import { tempStore } from "../helpers/temp_store.ts";

const names = logDbNames("log");
const entry = (
  stream: string,
  position: number,
  e: unknown,
): Write => [0, names.entries, [stream, position], [1000 + position, e]];
const head = (stream: string, h: number): Write => [0, names.meta, stream, { head: h, first: 1 }];

/**
 * `env` as a replicated store: each transaction is written at once, and acknowledged only when
 * the test says so (as a write waits for a majority of the nodes: `gate`); `feed` tells other
 * nodes' changes.
 */
function replicated(env: StoreEnv) {
  const feed = new LogChangeFeed();
  const gates: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let hold = false;
  const target = {
    transaction<T>(fn: () => T): Promise<T> {
      const result = env.root.transactionSync(fn);
      if (!hold) return Promise.resolve(result);
      return new Promise<T>((resolve, reject) =>
        gates.push({ resolve: () => resolve(result), reject })
      );
    },
  };
  const storage = {
    db: (name: string) => env.db(name),
    commits: new DirectCommits(target),
    remote: feed,
  } as unknown as Storage;
  return { storage, feed, gates, hold: (on: boolean) => (hold = on) };
}

/** Applies `writes` as another node's, around one local commit (as `ReplicatedEnv` does). */
function applyRemote(env: StoreEnv, feed: LogChangeFeed, writes: Write[]): void {
  feed.applying(writes);
  env.root.transactionSync(() => {
    for (const w of writes) if (w[0] === 0) env.db(w[1]).put(w[2], w[3]);
  });
  feed.applied(writes, true);
}

/** A join context that records the reply and whether it went live. */
function joinContext() {
  const seen: { pushed: [string, unknown][]; reply?: Record<string, unknown>; live: boolean } = {
    pushed: [],
    live: false,
  };
  const ctx = {
    push: (event: string, payload: unknown) => seen.pushed.push([event, payload]),
    corked: (fn: () => void) => fn(),
    accept: (reply: Record<string, unknown>) => (seen.reply = reply),
    subscribe: () => (seen.live = true),
    buffered: () => 0,
    drained: () => Promise.resolve(true),
  } as unknown as JoinContext;
  return { ctx, seen };
}

/** Joins `stream` of `log` from `from` (replay, snapshot at the head, live). */
function join(log: OrderedLog, stream: string, from?: { offset: number; epoch?: string }) {
  const { ctx, seen } = joinContext();
  const done = joinStream<string, number>(ctx, {
    log,
    stream,
    from,
    wire: { offset: "serial" },
    events: (r) => [["entry", { serial: r.position, entry: r.entry }]],
    snapshot: () => ({ position: log.head(stream), value: log.head(stream) }),
    reply: (value) => ({ head: value }),
  });
  return { done, seen };
}

Deno.test("store replaced: a join waiting at the swap is dropped; live delivery goes on from the new store, in order", async () => {
  const { env } = tempStore();
  const { storage, feed, gates, hold } = replicated(env);
  const log = new OrderedLog(storage, "log");
  const delivered: number[] = [];
  log.follow({
    appended: (_s, first, entries) => entries.forEach((_, i) => delivered.push(first + i)),
    purged: () => {},
  });
  const append = (e: string) => log.append("s", () => ({ entries: [e], result: null }));
  for (let i = 1; i <= 5; i++) await append(`old-${i}`);

  // An append stored but not yet acknowledged (a write waiting for a majority), and a join
  // whose snapshot holds it: the join waits for its position to be published.
  hold(true);
  const pending = append("old-6");
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(log.head("s"), 6);
  const waiting = join(log, "s");
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(waiting.seen.reply, undefined, "the join waits for position 6");

  // The swap: the store now holds the majority's history (2 entries of this stream).
  env.root.transactionSync(() => {
    for (const key of env.db(names.entries).getKeys()) env.db(names.entries).remove(key);
    for (const key of env.db(names.meta).getKeys()) env.db(names.meta).remove(key);
    env.db(names.entries).put(["s", 1], [1, "new-1"]);
    env.db(names.entries).put(["s", 2], [2, "new-2"]);
    env.db(names.meta).put("s", { head: 2, first: 1 });
  });
  feed.replaced();
  assert.equal(await waiting.done, false, "the waiting join ended without a reply");
  assert.equal(waiting.seen.reply, undefined);
  assert.equal(waiting.seen.live, false);
  // The old store's write fails (the node stopped itself).
  hold(false);
  gates.splice(0).forEach((g) => g.reject(new Error("diverged")));
  await assert.rejects(pending, /diverged/);

  // Other nodes' entries 3..7 are applied and delivered live, every one, in order.
  const before = delivered.length;
  for (let p = 3; p <= 7; p++) applyRemote(env, feed, [entry("s", p, `new-${p}`), head("s", p)]);
  assert.deepEqual(delivered.slice(before), [3, 4, 5, 6, 7]);
  // A join now replies at once, at the new head, and goes live.
  const fresh = join(log, "s");
  assert.equal(await fresh.done, true);
  assert.deepEqual(fresh.seen.reply?.head, 7);
  await env.close();
});

Deno.test("store replaced: a resume at or past a position of another history is reset, before it replayed", async () => {
  const { env } = tempStore();
  const { storage, feed } = replicated(env);
  const log = new OrderedLog(storage, "log");
  for (let i = 1; i <= 6; i++) await log.append("s", () => ({ entries: [`e-${i}`], result: null }));
  await log.append("other", () => ({ entries: ["x"], result: null }));
  const written = rangesWritten([[names.entries, ["s", 4]], [names.entries, ["s", 5]], [
    "objects:state",
    "k",
  ]]);
  assert.deepEqual([...written], [["log", new Map([["s", [4, 5]]])]]);
  feed.historyReplaced(written, Date.now() + 60_000);

  const past = join(log, "s", { offset: 4, epoch: "0" });
  assert.equal(await past.done, true);
  assert.equal(past.seen.reply?.replay, "reset", "at the first unsure position");
  assert.deepEqual(past.seen.pushed, [], "nothing replayed");
  const ahead = join(log, "s", { offset: 6, epoch: "0" });
  await ahead.done;
  assert.equal(ahead.seen.reply?.replay, "reset", "past it");
  const before = join(log, "s", { offset: 3, epoch: "0" });
  await before.done;
  assert.equal(before.seen.reply?.replay, "complete", "before it: a replay");
  assert.deepEqual(before.seen.pushed.map(([, p]) => (p as { serial: number }).serial), [4, 5, 6]);
  const other = join(log, "other", { offset: 1, epoch: "0" });
  await other.done;
  assert.equal(other.seen.reply?.replay, "complete", "a stream not written meanwhile");

  // Every stream: any resume is reset; once the time is over, replays again.
  feed.historyReplaced("all", Date.now() + 50);
  const all = join(log, "other", { offset: 1, epoch: "0" });
  await all.done;
  assert.equal(all.seen.reply?.replay, "reset");
  await new Promise((r) => setTimeout(r, 60));
  const later = join(log, "other", { offset: 1, epoch: "0" });
  await later.done;
  assert.equal(later.seen.reply?.replay, "complete");
  await env.close();
});
