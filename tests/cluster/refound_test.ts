// The operator's way back when every node refuses to rebuild (lib/cluster/divergence/refound.ts,
// docs/cluster.md "When every node refuses to rebuild (operator)"). Node 3 is fed another
// message at position 40 and stops; node 1 another one at 60, and nodes 1 and 2 then disagree
// with each other and with node 3: every node stops. Every node then reads yet another message
// at position 20 (as from a stream leader whose replica diverged there), so every rebuild is
// refused: the whole cluster answers 503. The operator stops the nodes, runs `switchboard
// cluster status` and `switchboard cluster refound` as documented, and starts them again (the
// fault hooks still on; node 3 on an emptied data dir): every node takes writes, every acknowledged write is on every node,
// their objects are identical, and a subscriber resuming gets a reset snapshot.
import assert from "node:assert/strict";
import { serverCommand } from "../helpers/server.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { connect } from "nats";
import { until } from "./cluster.ts";
import { cli, logState, startAfterRefound, startRefusingCluster } from "./refound_setup.ts";

/** How many of the log's replicas its leader reports offline, or has not heard from for 5 s. */
async function offlineReplicas(urls: string[]): Promise<number> {
  const nc = await connect({ servers: urls });
  try {
    const info = await (await nc.jetstreamManager({ timeout: 2000 })).streams.info("SWITCHBOARD");
    return (info.cluster?.replicas ?? []).filter((r) => r.offline || r.active > 5e9).length;
  } finally {
    await nc.close();
  }
}

Deno.test({
  name:
    "cluster refound: every node refuses to rebuild; status + refound bring the cluster back with every acknowledged write",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { cluster, written, topic, cursor } = await startRefusingCluster();
    try {
      // The operator: stop every node, look at the stores, re-found on the one the status names.
      const dirs = cluster.nodes.map((n) => n.dataDir);
      const nats = cluster.nats.urls.join(",");
      const logBefore = await logState(cluster.nats.urls);
      const early = await cli(["refound", "--data-dir", dirs[1], "--nats", nats]);
      assert.notEqual(early.code, 0);
      assert.match(
        early.out,
        /data dir .* is in use by process \d+: stop every node first \(nothing changed\)/,
        early.out,
      );
      // A copy of a running node's store (not locked): the nodes' heartbeats are heard.
      const copy = tempDir("sb-refound-copy-");
      const { cmd, args: pre } = serverCommand();
      const backup = await new Deno.Command(cmd, {
        args: [...pre, "backup", `${copy}/switchboard.mdb`, "--data-dir", dirs[1]],
        stdout: "null",
        stderr: "null",
      }).output();
      assert.equal(backup.code, 0);
      const running = await cli(["refound", "--data-dir", copy, "--nats", nats]);
      assert.notEqual(running.code, 0);
      assert.match(
        running.out,
        /nodes still running: node-1, node-2, node-3; stop every node first \(nothing changed\)/,
        running.out,
      );
      for (let i = 0; i < 3; i++) await cluster.nodes[i].stop();
      const status = await cli(["status", "--data-dir", dirs[0], dirs[1], dirs[2]]);
      assert.equal(status.code, 0, status.out);
      assert.match(status.out, /diverged: +yes/);
      const chosen = /re-found on: (\S+) \(holds/.exec(status.out)?.[1];
      assert.ok(chosen && chosen !== dirs[2], status.out);
      // A nats-server down: one of the log's replicas is offline, and would bring its old
      // history back when it returns.
      await cluster.nats.kill(2);
      await until(
        "the log's replica on the killed server is offline",
        async () => (await offlineReplicas(cluster.nats.urls.slice(0, 2))) > 0,
        30_000,
      );
      const down = await cli(["refound", "--data-dir", chosen, "--nats", nats]);
      assert.notEqual(down.code, 0);
      assert.match(
        down.out,
        /the log's replicas on \S+ are offline: start every nats-server first \(nothing changed\)/,
        down.out,
      );
      await cluster.nats.restart(2);
      await until(
        "every replica of the log is back",
        async () =>
          (await offlineReplicas(cluster.nats.urls)) === 0 &&
          (await logState(cluster.nats.urls))[1] === logBefore[1],
        30_000,
      );
      // Node 3 confirmed less: re-founding on it would lose what nodes 1 and 2 confirmed.
      const wrong = await cli([
        "refound",
        "--data-dir",
        dirs[2],
        "--nats",
        cluster.nats.urls.join(","),
        dirs[0],
        dirs[1],
      ]);
      assert.notEqual(wrong.code, 0);
      assert.match(
        wrong.out,
        /refusing to re-found on .*confirmed up to position \d+, past .* \(nothing changed/,
        wrong.out,
      );
      assert.deepEqual(
        await logState(cluster.nats.urls),
        logBefore,
        "the refusals changed nothing",
      );
      const others = dirs.filter((d) => d !== chosen);
      const done = await cli([
        "refound",
        "--data-dir",
        chosen,
        "--nats",
        cluster.nats.urls.join(","),
        ...others,
      ]);
      assert.equal(done.code, 0, done.out);
      const base = Number(
        /re-founded the cluster log on \S+ at position (\d+)/.exec(done.out)?.[1],
      );
      assert.ok(base >= Math.max(...written.values()), done.out);
      assert.match((await cli(["status", "--data-dir", chosen])).out, /diverged: +no/);

      // Started again, the fault hooks still on (see startAfterRefound): every node takes
      // writes and holds every acknowledged write.
      const nodes = await startAfterRefound(cluster, chosen, base, written);
      // A subscriber resuming from its old cursor gets a fresh snapshot, on every node.
      await until(
        "every stream's epoch is renewed",
        () =>
          Promise.resolve(/cluster renewed the epochs/.test(nodes.map((n) => n.output()).join(""))),
        30_000,
      );
      for (const node of nodes) {
        await until("a resume from the old cursor is reset", async () => {
          const s = await RawSocket.connect(node.wsUrl("key1"));
          try {
            const reply = await s.join(topic, cursor);
            return reply.status === "ok" && reply.response.replay === "reset";
          } finally {
            await s.close();
          }
        }, 30_000);
      }
    } finally {
      await cluster.stop();
    }
  },
});
