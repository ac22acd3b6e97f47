// The epoch renewal of the ordered log (a `HistoryReplaced` for good, told by a replicated
// store through `LogChangeFeed`), over real LMDB: a stream gets a new epoch with its entries,
// head and positions kept; a client position of the old epoch then resumes with a reset (a
// full snapshot), one of the new epoch with a replay. Another node's renewal reaches this
// node's logs as a renewal, never as a purge: nothing is deleted, no purge is told, and live
// delivery goes on in order. With the unsure positions recorded, a resume without an epoch
// resets inside them, for good, and replays outside them. On one node nothing is consulted.
import assert from "node:assert/strict";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { DirectCommits } from "../../lib/store/direct_commits.ts";
import type { StoreEnv } from "../../lib/store/env.ts";
import type { Storage } from "../../lib/store/storage.ts";
import { logDbNames } from "../../lib/store/log_layout.ts";
import { LogChangeFeed, streamChanges, type Write } from "../../lib/cluster/log_changes.ts";
import { joinStream } from "../../lib/streams/join.ts";
import type { JoinContext } from "../../lib/socket/handler.ts";
import { tempStore } from "../helpers/temp_store.ts";

/** Joins `stream` of `log` from `from`; the events pushed before the reply, and the reply. */
async function join(log: OrderedLog, stream: string, from?: { offset: number; epoch?: string }) {
  const seen: { pushed: number[]; reply?: Record<string, unknown> } = { pushed: [] };
  const ctx = {
    push: (_event: string, payload: { serial: number }) => seen.pushed.push(payload.serial),
    corked: (fn: () => void) => fn(),
    accept: (reply: Record<string, unknown>) => (seen.reply = reply),
    subscribe: () => {},
    buffered: () => 0,
    drained: () => Promise.resolve(true),
  } as unknown as JoinContext;
  assert.equal(
    await joinStream<string, string[]>(ctx, {
      log,
      stream,
      from,
      wire: { offset: "serial" },
      events: (r) => [["entry", { serial: r.position }]],
      snapshot: () => ({
        position: log.head(stream),
        value: log.after<string>(stream, 0).map((r) => r.entry),
      }),
      reply: (value) => ({ entries: value }),
    }),
    true,
  );
  return seen;
}

const one = (e: string) => () => ({ entries: [e], result: null });

/** `env` as a replicated store whose other nodes' changes `feed` tells (see store_replaced_test). */
function replicated(env: StoreEnv) {
  const feed = new LogChangeFeed();
  const target = { transaction: <T>(fn: () => T) => Promise.resolve(env.root.transactionSync(fn)) };
  const storage = {
    db: (name: string) => env.db(name),
    commits: new DirectCommits(target),
    remote: feed,
  } as unknown as Storage;
  /** Renews `streams` of the log `log` for good, with their ranges, in one transaction. */
  const renew = (streams: [string, number, number | null][], log = "log") =>
    storage.commits.run(() =>
      feed.historyReplaced(
        new Map([[log, new Map(streams.map(([s, from, to]) => [s, [from, to]]))]]),
      )
    );
  return { storage, feed, renew };
}

Deno.test("epoch renewal gives a new epoch and keeps the entries; an old cursor resets, a new one replays", async () => {
  const { env } = tempStore();
  const { storage, renew } = replicated(env);
  const log = new OrderedLog(storage, "log");
  for (const e of ["a", "b", "c", "d"]) await log.append("s", one(e));
  await log.append("other", one("x"));
  const before = await join(log, "s", { offset: 0 });
  const old = before.reply!.epoch as string;
  assert.equal(old, "0");

  await renew([["s", 9, 9]]);
  const epoch = log.epoch("s");
  assert.match(epoch, /^[0-9a-f]{8}$/);
  assert.equal(log.epoch("s"), epoch);
  assert.equal(log.epoch("other"), "0", "only the streams named");
  assert.equal(log.head("s"), 4);
  assert.equal(log.first("s"), 1);
  assert.deepEqual(log.after<string>("s", 0).map((r) => [r.position, r.entry]), [
    [1, "a"],
    [2, "b"],
    [3, "c"],
    [4, "d"],
  ]);

  // A cursor of the old epoch: a reset (nothing replayed, the whole snapshot), at any position.
  for (const offset of [0, 2, 4]) {
    const r = await join(log, "s", { offset, epoch: old });
    assert.deepEqual(r.pushed, []);
    assert.equal(r.reply!.replay, "reset");
    assert.equal(r.reply!.epoch, epoch);
    assert.deepEqual(r.reply!.entries, ["a", "b", "c", "d"]);
  }
  // A cursor of the new epoch: the entries after it, replayed.
  const resumed = await join(log, "s", { offset: 2, epoch });
  assert.deepEqual(resumed.pushed, [3, 4]);
  assert.equal(resumed.reply!.replay, "complete");
  assert.equal(resumed.reply!.epoch, epoch);
  // Appends go on at the next position, in the new epoch; another renewal, another epoch.
  assert.equal((await log.append("s", one("e"))).position, 5);
  assert.equal(log.epoch("s"), epoch);
  await renew([["s", 9, 9]]);
  assert.notEqual(log.epoch("s"), epoch);
  // Read back from storage by another log over the same environment.
  assert.equal(new OrderedLog(env, "log").epoch("s"), log.epoch("s"));
  await env.close();
});

Deno.test("epoch renewal: another node's renewal is told as a renewal, not a purge; delivery goes on in order", async () => {
  const names = logDbNames("log");
  const entry = (
    position: number,
    e: string,
  ): Write => [0, names.entries, ["s", position], [1000 + position, e]];
  // A purge removes the head row before it writes the epoch; a renewal writes the epoch alone.
  const purge: Write[] = [[1, names.entries, ["s", 1]], [1, names.meta, "s"], [
    0,
    names.epochs,
    "s",
    "p1",
  ]];
  assert.deepEqual(streamChanges(names, purge), [{ stream: "s", purged: "p1", appended: [] }]);
  assert.deepEqual(streamChanges(names, [[0, names.epochs, "s", "r1"]]), [{
    stream: "s",
    appended: [],
  }]);
  // In one batch: a purge, an append, then a renewal of the same stream.
  const mixed = streamChanges(names, [...purge, entry(1, "n"), [0, names.meta, "s", {
    head: 1,
    first: 1,
  }], [0, names.epochs, "s", "r2"]]);
  assert.equal(mixed.length, 1);
  assert.equal(mixed[0].purged, "p1");
  assert.deepEqual(mixed[0].appended.map((r) => r.position), [1]);

  const { env } = tempStore();
  const { storage, feed, renew } = replicated(env);
  const log = new OrderedLog(storage, "log");
  const seen: string[] = [];
  log.follow({
    appended: (_s, first, entries) => entries.forEach((_, i) => seen.push(`append ${first + i}`)),
    purged: (_s, epoch) => seen.push(`purge ${epoch}`),
  });
  const apply = (writes: Write[]) => {
    feed.applying(writes);
    env.root.transactionSync(() => {
      for (const w of writes) if (w[0] === 0) env.db(w[1]).put(w[2], w[3]);
    });
    feed.applied(writes, true);
  };
  apply([entry(1, "a"), [0, names.meta, "s", { head: 1, first: 1 }], entry(2, "b")]);
  // A live join, so the stream is tracked while the renewal arrives.
  await join(log, "s");
  apply([[0, names.epochs, "s", "r1"]]);
  apply([entry(3, "c"), [0, names.meta, "s", { head: 3, first: 1 }]]);
  assert.deepEqual(seen, ["append 1", "append 2", "append 3"], "no purge told, delivery in order");
  assert.equal(log.epoch("s"), "r1");
  assert.equal(log.head("s"), 3);
  const old = await join(log, "s", { offset: 2, epoch: "0" });
  assert.equal(old.reply!.replay, "reset");
  const current = await join(log, "s", { offset: 2, epoch: "r1" });
  assert.deepEqual(current.pushed, [3]);

  // The store's own renewal (a rebuilt node's replicated write) runs inside its transaction.
  await renew([["s", 1, 1]]);
  await renew([["s", 1, 1]], "elsewhere");
  assert.notEqual(log.epoch("s"), "r1");
  assert.equal(log.head("s"), 3);
  await env.close();
});

Deno.test("epoch renewal with unsure positions: a resume without an epoch resets inside them and replays outside", async () => {
  const { env } = tempStore();
  const { storage, renew } = replicated(env);
  const log = new OrderedLog(storage, "log");
  for (const e of ["a", "b", "c", "d", "e", "f"]) await log.append("s", one(e));
  await log.append("t", one("x"));
  // Positions 3-4 of `s` unsure; `t` from 1 with no known end; `u` has no entries yet.
  await renew([["s", 3, 4], ["t", 1, null], ["u", 1, 2]]);
  const epoch = log.epoch("s");
  assert.notEqual(epoch, "0");
  assert.equal(log.head("s"), 6, "entries kept");
  for (const offset of [3, 4]) {
    const r = await join(log, "s", { offset });
    assert.deepEqual([r.reply!.replay, r.pushed], ["reset", []], `at ${offset}`);
  }
  assert.deepEqual(
    (await join(log, "s", { offset: 2 })).pushed,
    [3, 4, 5, 6],
    "below the range: replayed",
  );
  assert.deepEqual((await join(log, "s", { offset: 5 })).pushed, [6], "above the range: replayed");
  assert.equal(
    (await join(log, "s", { offset: 0 })).reply!.replay,
    "complete",
    "nothing held: replayed",
  );
  // With the new epoch a cursor inside replays; with the old one any cursor resets.
  assert.deepEqual((await join(log, "s", { offset: 3, epoch })).pushed, [4, 5, 6]);
  assert.equal((await join(log, "s", { offset: 2, epoch: "0" })).reply!.replay, "reset");
  assert.equal((await join(log, "t", { offset: 1 })).reply!.replay, "reset", "no known end");
  assert.equal(log.replacedAt("u", 2), true, "a stream the majority never wrote yet");
  assert.equal(log.replacedAt("u", 3), false);
  // A second range from the same position widens it.
  await renew([["s", 3, 5]]);
  assert.equal(log.replacedAt("s", 5), true);
  assert.equal(log.replacedAt("s", 6), false);
  // On one node (no other nodes' changes) nothing is consulted, over the same store too.
  const { env: single } = tempStore();
  const alone = new OrderedLog(single, "log");
  await alone.append("s", one("a"));
  assert.equal(alone.replacedAt("s", 1), false);
  assert.equal(new OrderedLog(env, "log").replacedAt("u", 2), false);
  await single.close();
  await env.close();
});
