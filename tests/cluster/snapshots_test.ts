// Clustered mode keeps its log bounded: after every N positions one node stores a snapshot of
// its store and the log is purged up to the previous one. A node back after the purge and a
// new node with an empty data dir both start from the snapshot and then follow the log: same
// state, same object log, and writes go on from them.
import assert from "node:assert/strict";
import { connect } from "nats";
import { RawSocket } from "../helpers/raw_socket.ts";
import type { TestServer } from "../helpers/server.ts";
import { call } from "../pubsub/helpers.ts";
import { startCluster, until } from "./cluster.ts";

const path = "/api/v1/objects/app-1/counter/snap";
const EVERY = 100;

async function increments(node: TestServer, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const r = await call(node, "POST", `${path}/increment`, { slot: "n" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
}

/** Asserts `node` holds the counter at `n` and replays its object log exactly after 5. */
async function assertHolds(node: TestServer, n: number): Promise<void> {
  await until(`node holds ${n}`, async () => (await call(node, "GET", path)).body.log_id === n);
  assert.deepEqual((await call(node, "GET", path)).body, { state: { n }, log_id: n });
  const s = await RawSocket.connect(node.wsUrl());
  try {
    const topic = "durable:key1:counter:snap";
    const j = await s.join(topic, { app_secret: "secret1", after_log_id: 5 });
    assert.equal(j.response.log_id, n);
    const reply = s.frames.findIndex((f) => f[3] === "phx_reply");
    const replayed = s.frames.slice(0, reply).filter((f) => f[2] === topic && f[3] === "change");
    assert.deepEqual(
      replayed.map((f) => f[4].log_id),
      Array.from({ length: n - 5 }, (_, i) => i + 6),
    );
  } finally {
    await s.close();
  }
}

Deno.test({
  name:
    "cluster snapshots: the log is compacted; a returning node and a new node start from the newest snapshot",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cluster = await startCluster({
      // Three nodes: a write needs a majority of them, so one may be away.
      nodes: 3,
      env: {
        SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "200",
        SWITCHBOARD_CLUSTER_SNAPSHOT_EVERY: String(EVERY),
      },
    });
    const nc = await connect({ servers: cluster.nats.urls });
    try {
      const jsm = await nc.jetstreamManager();
      const state = async () => (await jsm.streams.info("SWITCHBOARD")).state;
      await increments(cluster.nodes[0], 10);
      await assertHolds(cluster.nodes[1], 10);
      await assertHolds(cluster.nodes[2], 10);
      await cluster.kill(1);

      const stored = () => cluster.nodes[0].output().match(/cluster snapshot stored/g)?.length ?? 0;
      await increments(cluster.nodes[0], EVERY + 20);
      await until("a first snapshot", () => Promise.resolve(stored() === 1));
      await increments(cluster.nodes[0], EVERY + 20);
      const total = 2 * EVERY + 50;
      await until(
        "the log is compacted past node 2's position",
        async () => (await state()).first_seq > EVERY,
      );
      const { first_seq, messages } = await state();
      assert.ok(messages < total - EVERY, `the log keeps ${messages} of ${total} positions`);
      assert.ok(first_seq > 11, "node 2's next position is gone from the log");

      const back = await cluster.restart(1);
      assert.match(back.output(), /restored from a snapshot/);
      await assertHolds(back, total);

      const fresh = await cluster.restart(3);
      assert.match(fresh.output(), /restored from a snapshot/);
      await assertHolds(fresh, total);

      await increments(fresh, 5);
      await increments(back, 5);
      for (const node of cluster.nodes) await assertHolds(node, total + 10);
      assert.equal(cluster.nodes.length, 4);
    } finally {
      await nc.close();
      await cluster.stop();
    }
  },
});
