// A node that stopped itself because it applied the log differently from a majority of the
// nodes (fed another message at one position by the fault hook SWITCHBOARD_FAULT_FORK_AT, as
// by a NATS stream replica that diverged) rebuilds its store by itself, without a restart:
// from the whole log, or from the newest snapshot plus the log after it. Afterwards its
// objects' logs and states equal the others', it acknowledges writes again, /readyz is 200
// and a subscriber on it ends with the exact object. A node killed while stopped rebuilds its
// store when it starts again, before it serves.
import assert from "node:assert/strict";
import { Socket } from "phoenix";
import { call, sdkFor } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { ObjectSubscription } from "../../sdk/client/object_subscription.ts";
import { startForkedCluster, until as untilBare } from "./cluster.ts";
import { appendAt, assertNoLoss, path, writers } from "./writers.ts";

const FORK_AT = 40;
const STOPPED = /applied the log differently from a majority of the nodes/;
const HEALED = /cluster node rebuilt its store and takes writes again/;
/** The nodes of the running test, whose logs a failed wait shows. */
let shown: () => TestServer[] = () => [];

/** `until`, with the last lines of every node's log in the error when the wait fails (a wait
 * that failed under load in CI said nothing of where the nodes were). */
async function until(what: string, fn: () => Promise<boolean>, ms?: number) {
  try {
    await untilBare(what, fn, ms);
  } catch (err) {
    const tails = shown().map((n, i) =>
      `--- node ${i + 1}:\n${n.output().trimEnd().split("\n").slice(-25).join("\n")}`
    );
    throw new Error(`${(err as Error).message}\n${tails.join("\n")}`);
  }
}
/** The object and its whole log as `node` holds them. */
async function objectOn(node: TestServer, key: string) {
  const [snap, log] = await Promise.all([
    call(node, "GET", path(key)),
    call(node, "GET", `${path(key)}/log`),
  ]);
  return { snapshot: snap.body, log: log.body.items };
}

/** Asserts every node holds the same object and log, with every acknowledged write. */
async function assertConverged(nodes: TestServer[], key: string, w: ReturnType<typeof writers>) {
  await until("every node holds the same object and log", async () => {
    const all = await Promise.all(nodes.map((n) => objectOn(n, key)));
    return all.every((o) => JSON.stringify(o) === JSON.stringify(all[0]));
  }, 30_000);
  const all = await Promise.all(nodes.map((n) => objectOn(n, key)));
  for (const o of all.slice(1)) assert.deepEqual(o, all[0]);
  assert.equal(all[0].log.length, all[0].snapshot.log_id, "one log item per position");
  for (const node of nodes) await assertNoLoss(node, key, w);
}

/** A phoenix subscriber of the test object on `node` (ObjectSubscription rejoins by itself). */
function subscriber(node: TestServer, key: string) {
  const socket = new Socket(`ws://127.0.0.1:${node.port}/socket`, {
    params: { app_key: "key1" },
    reconnectAfterMs: () => 50,
  });
  const sb = sdkFor(node);
  const sub = new ObjectSubscription(
    socket,
    "key1",
    "ledger",
    key,
    async (socketId) => (await sb.authenticateObject(socketId, "ledger", key)).auth,
  );
  let snapshots = 0;
  sub.on("change", (c) => {
    if (c.type === "snapshot") snapshots++;
  });
  // A refused join is not tried again by the subscription: the test says so at once.
  const errors: string[] = [];
  sub.on("error", (reason) => errors.push(reason));
  socket.connect();
  return { sub, socket, snapshots: () => snapshots, errors };
}

/** Writes on node 3 once it is back, with its reply's position readable on node 1. */
async function assertTakesWrites(n3: TestServer, n1: TestServer, key: string) {
  const r = await fetch(`${n3.baseUrl}${path(key)}/append`, {
    method: "POST",
    headers: n3.headers(n3.apps[0]),
    body: JSON.stringify({ slot: "l", value: "after-heal" }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  const position = r.headers.get("switchboard-position");
  assert.ok(position && Number(position) > 0);
  const read = await fetch(`${n1.baseUrl}${path(key)}`, {
    headers: { ...n1.headers(n1.apps[0]), "switchboard-min-position": position },
  });
  const state = await read.json();
  assert.equal(read.status, 200);
  assert.equal(state.state.l[body.log_id - 1], "after-heal");
}

for (const mode of ["the whole log", "the newest snapshot and the log after it"]) {
  Deno.test({
    name: `cluster self-heal: a node that stopped itself rebuilds from ${mode} without a restart`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const snapshots = mode !== "the whole log";
      const key = snapshots ? "heal-snap" : "heal-log";
      // node-1 owns the snapshots of node-1..3 (rendezvous hashing); node 3 is forked.
      const cluster = await startForkedCluster(
        { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT) },
        snapshots ? { SWITCHBOARD_CLUSTER_SNAPSHOT_EVERY: "25" } : {},
      );
      shown = () => cluster.nodes;
      let watch: ReturnType<typeof subscriber> | undefined;
      try {
        const [n1, n2, n3] = cluster.nodes;
        watch = subscriber(n3, key);
        let synced = false;
        void watch.sub.whenSynced().then(() => synced = true);
        await until(
          "the subscriber on node 3 has its snapshot",
          () => Promise.resolve(synced || watch!.errors.length > 0),
        );
        assert.deepEqual(watch.errors, [], "its join was not refused");
        if (snapshots) {
          // A snapshot exists before node 3 forks (else, on a loaded machine, its rebuild could
          // come first and start from the empty store).
          let position = 0;
          while (position < 26) {
            position = await appendAt(n1, `${key}-before`, `before-${position}`);
          }
          assert.ok(position < FORK_AT);
          await until(
            "a first snapshot",
            () => Promise.resolve(/cluster snapshot stored/.test(n1.output())),
            60_000,
          );
        }
        const w = writers(() => cluster.nodes, key, 6);
        await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
        await until(
          "node 3 rebuilds its store and takes writes again",
          () => Promise.resolve(HEALED.test(n3.output())),
          60_000,
        );
        const at = w.acked.size;
        await until(
          "writes go on through every node",
          () => Promise.resolve(w.acked.size > at + 30),
          30_000,
        );
        await w.stop();

        const replaced = n3.output().match(/cluster store replaced.*position[=:" ]+(\d+)/);
        assert.ok(replaced, "node 3 replaced its store");
        if (snapshots) assert.ok(Number(replaced[1]) > 0, "from a snapshot");
        else assert.equal(Number(replaced[1]), 0, "from the whole log");
        assert.match(n3.output(), /sockets closed/);
        assert.equal(
          n3.output().match(/listening on/g)?.length,
          1,
          "the same process, never restarted",
        );

        await assertConverged([n1, n2, n3], key, w);
        for (const node of [n1, n2, n3]) {
          assert.deepEqual(await (await fetch(`${node.baseUrl}/readyz`)).json(), {
            status: "ready",
          });
        }
        await assertTakesWrites(n3, n1, key);
        await assertConverged([n1, n2, n3], key, {
          ...w,
          acked: new Map(w.acked),
          unknown: new Set([...w.unknown, "after-heal"]),
        });

        // The subscriber on node 3 was sent away when the store was replaced, rejoined and
        // holds the exact object.
        const truth = (await call(n1, "GET", path(key))).body;
        await until(
          "the subscriber on node 3 is exact",
          () => Promise.resolve(watch!.errors.length > 0 || watch!.sub.logId === truth.log_id),
          30_000,
        );
        assert.deepEqual(watch.errors, [], "no join of the subscriber was refused");
        assert.deepEqual(watch.sub.state, truth.state);
        assert.ok(watch.snapshots() >= 2, "it rejoined");
      } finally {
        watch?.socket.disconnect();
        await cluster.stop();
      }
    },
  });
}

Deno.test({
  name: "cluster self-heal: a node killed while stopped rebuilds its store before it serves again",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const key = "heal-crash";
    // Node 3 waits long before it rebuilds: it is killed first. Restarted, it runs with the
    // usual pause: a rebuild at start that fails (a read of the log timing out on a loaded
    // machine) is tried again after it, where the long pause (capped at 30 s) outlasted the
    // test's wait for the nodes to converge.
    let restarted = false;
    const cluster = await startForkedCluster((): Record<string, string> =>
      restarted ? {} : {
        SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
        SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "600000",
      }
    );
    shown = () => cluster.nodes;
    try {
      const w = writers(() => cluster.nodes.slice(0, 2), key, 4);
      await until(
        "node 3 stops itself",
        () => Promise.resolve(STOPPED.test(cluster.nodes[2].output())),
      );
      const refused = await call(cluster.nodes[2], "POST", `${path(key)}/append`, {
        slot: "l",
        value: "refused",
      });
      assert.equal(refused.status, 503);
      assert.match(JSON.stringify(refused.body), STOPPED);
      const ready = await fetch(`${cluster.nodes[2].baseUrl}/readyz`);
      assert.equal(ready.status, 503);
      assert.match((await ready.json()).reason, STOPPED);
      // A read asking for a position it applied (on another history) is refused.
      const position = (await call(cluster.nodes[0], "GET", path(key))).body.log_id;
      const stale = await fetch(`${cluster.nodes[2].baseUrl}${path(key)}`, {
        headers: {
          ...cluster.nodes[2].headers(cluster.nodes[2].apps[0]),
          "switchboard-min-position": "1",
        },
      });
      assert.equal(stale.status, 503, `log_id ${position} on node 1`);
      await stale.body?.cancel();
      await cluster.kill(2);
      restarted = true;
      const n3 = await cluster.restart(2);
      assert.match(n3.output(), /cluster store marked diverged; rebuilding it before serving/);
      const at = w.acked.size;
      await until("writes go on", () => Promise.resolve(w.acked.size > at + 20));
      await w.stop();
      await assertConverged(cluster.nodes, key, w);
      assert.equal((await fetch(`${n3.baseUrl}/readyz`)).status, 200);
      await assertTakesWrites(n3, cluster.nodes[0], key);
    } finally {
      await cluster.stop();
    }
  },
});
