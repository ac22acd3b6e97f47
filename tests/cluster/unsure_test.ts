// The report of a node that stopped itself as diverged (`lib/cluster/divergence/unsure.ts`), over real
// LMDB with an ordered log: a node that hears it lists the streams and renews each once per
// report, recording the unsure positions (a resume without an epoch inside them resets, outside
// replays); a renewal found done renews nothing; a report naming every stream renews every
// stream the hearing node holds; a report of an earlier version (no id) only opens the window;
// a list of an earlier version is adopted. The race of two nodes landing the same renewal is in
// tests/cluster/renewed_epoch_test.ts (a real cluster).
import assert from "node:assert/strict";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { DirectCommits } from "../../lib/store/direct_commits.ts";
import type { StoreEnv } from "../../lib/store/env.ts";
import type { Storage } from "../../lib/store/storage.ts";
import { LogChangeFeed } from "../../lib/cluster/log_changes.ts";
import {
  LEGACY_DB,
  PENDING_DB,
  RENEWED_DB,
  type StreamRanges,
  UNSURE_SUBJECT,
  UnsureStreams,
} from "../../lib/cluster/divergence/unsure.ts";
import { tempStore } from "../helpers/temp_store.ts";
import { until } from "./cluster.ts";
import { Packr } from "msgpackr";

/** A node over `env`: its ordered log "log", its report handling, what it published, and
 * whether it takes writes. */
function node(env: StoreEnv, nodeId: string, pruneAfterMs?: number) {
  const feed = new LogChangeFeed();
  const transaction = <T>(fn: () => T) => Promise.resolve(env.root.transactionSync(fn));
  const storage = {
    db: (name: string) => env.db(name),
    commits: new DirectCommits({ transaction }),
    remote: feed,
  } as unknown as Storage;
  const log = new OrderedLog(storage, "log");
  // The same log read by a node that heard no report: what a renewal recorded for good.
  const recorded = new OrderedLog({ ...storage, remote: { follow: () => {} } }, "log");
  const sent: Uint8Array[] = [];
  const state = { writable: true };
  const unsure = new UnsureStreams(
    {
      nodeId,
      rawDb: (name) => env.db(name),
      db: (name) => env.db(name),
      transaction,
      changes: feed,
      publish: (subject, data) => subject === UNSURE_SUBJECT && sent.push(data),
      maxPayload: 1024 * 1024,
      writable: () => state.writable,
      closed: () => false,
    },
    60_000,
    pruneAfterMs,
  );
  return { log, recorded, unsure, sent, state };
}

const one = (e: string) => () => ({ entries: [e], result: null });
const ranges = (list: [string, number, number | null][]): StreamRanges =>
  new Map([["log", new Map(list.map(([s, from, to]) => [s, [from, to]]))]]);
/** The first position of `stream` a resume with an epoch is reset at (the window), if any. */
const windowFrom = (log: OrderedLog, stream: string) =>
  [1, 2, 3, 4, 5].find((p) => log.replacedAt(stream, p, "e"));
const rows = (env: StoreEnv, db: string) =>
  [...env.db(db).getRange()].map(({ key, value }) => [key, value]);

type Node = ReturnType<typeof node>;
/** Runs `fn` with node `a` (the one that stops itself) and node `b` (which hears it), each on
 * its own store, closing both after. */
async function withPair(fn: (a: Node, b: Node, envA: StoreEnv, env: StoreEnv) => Promise<void>) {
  const { env: envA } = tempStore();
  const { env } = tempStore();
  const a = node(envA, "a");
  const b = node(env, "b");
  try {
    await fn(a, b, envA, env);
  } finally {
    a.unsure.close();
    b.unsure.close();
    await envA.close();
    await env.close();
  }
}

Deno.test("unsure report: a node that hears it renews each stream once, recording its positions", () =>
  withPair(async (a, b, envA, env) => {
    for (const e of ["p", "q", "r", "s"]) await b.log.append("s", one(e));
    // Node a stopped itself: serials 2-3 of `s` unsure, and `new` (a stream b never wrote).
    const named = a.unsure.stopped("a:r1", 10, ranges([["s", 2, 3], ["new", 1, 1]]));
    assert.deepEqual(named, ranges([["s", 2, 3], ["new", 1, 1]]));
    assert.equal(a.sent.length, 1);
    assert.equal(windowFrom(a.log, "s"), 2, "its own window too");
    // Its own report is not heard back (the stopped node lists its streams itself: `keep`).
    a.unsure.heard(a.sent[0]);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(rows(envA, PENDING_DB), []);

    b.state.writable = false;
    b.unsure.heard(a.sent[0]);
    assert.equal(windowFrom(b.log, "s"), 2, "the window opens at once");
    await until("b lists the report", () => Promise.resolve(rows(env, PENDING_DB).length === 2));
    assert.equal(b.log.epoch("s"), "0", "nothing renewed while b takes no writes");
    b.state.writable = true;
    await b.unsure.renew();
    const epoch = b.log.epoch("s");
    assert.notEqual(epoch, "0");
    assert.notEqual(b.log.epoch("new"), "0");
    assert.deepEqual(rows(env, PENDING_DB), [], "the list emptied by the renewal");
    assert.deepEqual(rows(env, RENEWED_DB).map(([k]) => k), [["a:r1", "log", "new"], [
      "a:r1",
      "log",
      "s",
    ]]);
    assert.deepEqual([1, 2, 3, 4].map((p) => b.recorded.replacedAt("s", p)), [
      false,
      true,
      true,
      false,
    ]);
    assert.equal(b.log.head("s"), 4, "entries kept");

    // Heard again (it is told every 5 s): nothing listed, nothing renewed again.
    b.unsure.heard(a.sent[0]);
    await new Promise((r) => setTimeout(r, 50));
    await b.unsure.renew();
    assert.deepEqual(rows(env, PENDING_DB), []);
    assert.equal(b.log.epoch("s"), epoch);
    // A node that listed the same report (here the stopped one, on the store b wrote) finds the
    // renewal done: it empties its list and renews nothing.
    const c = node(env, "c");
    env.root.transactionSync(() => c.unsure.keep("a:r1", named));
    assert.equal(rows(env, PENDING_DB).length, 2);
    await c.unsure.renew();
    assert.deepEqual(rows(env, PENDING_DB), []);
    assert.equal(b.log.epoch("s"), epoch);
    // Another report of the same stream renews it again.
    env.root.transactionSync(() => c.unsure.keep("a:r2", ranges([["s", 4, 4]])));
    await c.unsure.renew();
    assert.notEqual(b.log.epoch("s"), epoch);
    assert.equal(b.recorded.replacedAt("s", 4), true);
  }));

Deno.test("unsure report: every stream named renews every stream the hearing node holds, with no end", () =>
  withPair(async (a, b, _envA, env) => {
    await b.log.append("s", one("p"));
    await b.log.append("t", one("q"));
    a.unsure.stopped("a:all", 1, "all");
    b.unsure.heard(a.sent[0]);
    assert.equal(windowFrom(b.log, "t"), 1);
    await until(
      "b renews every stream",
      () => Promise.resolve(b.log.epoch("s") !== "0" && b.log.epoch("t") !== "0"),
    );
    assert.equal(b.recorded.replacedAt("t", 1_000_000), true);
    const epochs = [b.log.epoch("s"), b.log.epoch("t")];
    // Heard again: the report is listed already.
    b.unsure.heard(a.sent[0]);
    await new Promise((r) => setTimeout(r, 50));
    await b.unsure.renew();
    assert.deepEqual([b.log.epoch("s"), b.log.epoch("t")], epochs);
    const listed = rows(env, PENDING_DB);
    assert.deepEqual(listed.map(([k]) => k), [["a:all", "", ""]]);
    assert.equal(typeof listed[0][1], "number", "listed, with when");
  }));

Deno.test("unsure report: one of an earlier version opens the window only; its list is adopted", async () => {
  const { env } = tempStore();
  const b = node(env, "b");
  try {
    await b.log.append("s", one("p"));
    const codec = new Packr({ useRecords: false });
    b.unsure.heard(codec.pack({ n: "a", ttl: 60_000, s: [["log", "s", 1]] }));
    assert.equal(windowFrom(b.log, "s"), 1);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(rows(env, PENDING_DB), [], "no report id: its own node renews");
    // Not a report at all: ignored.
    b.unsure.heard(new Uint8Array([1, 2, 3]));

    env.db(LEGACY_DB).putSync(["log", "s"], 1);
    b.unsure.adoptLegacy();
    assert.deepEqual(rows(env, LEGACY_DB), []);
    assert.deepEqual(rows(env, PENDING_DB), [[["legacy:b", "log", "s"], [1, null]]]);
    await b.unsure.renew();
    assert.notEqual(b.log.epoch("s"), "0");
    assert.equal(b.recorded.replacedAt("s", 1), true);
  } finally {
    b.unsure.close();
    await env.close();
  }
});

Deno.test("unsure markers: pruned once old, unless their report is still listed; the epochs and positions kept", async () => {
  const [{ env: envA }, { env: envC }, { env }] = [tempStore(), tempStore(), tempStore()];
  const a = node(envA, "a");
  const c = node(envC, "c");
  const b = node(env, "b", 3000);
  try {
    await b.log.append("s", one("p"));
    await b.log.append("t", one("q"));
    a.unsure.stopped("a:r1", 10, ranges([["s", 1, 1]]));
    b.unsure.heard(a.sent[0]);
    await until("b renews a's stream", () => Promise.resolve(rows(env, RENEWED_DB).length === 1));
    c.unsure.stopped("c:all", 1, "all");
    b.unsure.heard(c.sent[0]);
    await until(
      "b renews every stream for c",
      () => Promise.resolve(rows(env, RENEWED_DB).length === 3),
    );
    // An earlier version's mark of a listed report (no time): it gets one.
    env.db(PENDING_DB).putSync(["x:all", "", ""], "listed");
    const epochs = [b.log.epoch("s"), b.log.epoch("t")];
    assert.equal(await b.unsure.prune(), 0, "nothing old enough yet");
    assert.equal(rows(env, RENEWED_DB).length, 3);
    assert.equal(typeof env.db(PENDING_DB).get(["x:all", "", ""]), "number");

    // b lists a's report again (as the stopped node does): its marker stays while listed.
    env.root.transactionSync(() => b.unsure.keep("a:r1", ranges([["s", 1, 1]])));
    await new Promise((r) => setTimeout(r, 3100));
    // (Its own timer prunes too, every second: the rows tell, not the count.)
    await b.unsure.prune();
    assert.deepEqual(rows(env, RENEWED_DB).map(([k]) => k), [["a:r1", "log", "s"]]);
    assert.deepEqual(
      rows(env, PENDING_DB).map(([k]) => k),
      [["a:r1", "log", "s"]],
      "the lists of every stream pruned",
    );
    // The renewal found done for the report still listed: nothing renewed again.
    await b.unsure.renew();
    assert.deepEqual(rows(env, PENDING_DB), []);
    assert.deepEqual([b.log.epoch("s"), b.log.epoch("t")], epochs);
    await new Promise((r) => setTimeout(r, 3100));
    await b.unsure.prune();
    assert.deepEqual(rows(env, RENEWED_DB), []);
    // What protects a subscriber is kept: the epochs and the unsure positions.
    assert.deepEqual([b.log.epoch("s"), b.log.epoch("t")], epochs);
    assert.equal(b.recorded.replacedAt("s", 1), true);
    assert.equal(b.recorded.replacedAt("t", 1_000_000), true);
  } finally {
    for (const n of [a, b, c]) n.unsure.close();
    for (const e of [envA, envC, env]) await e.close();
  }
});
