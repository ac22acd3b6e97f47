// Clustered mode under faults: SIGKILL of the JetStream stream leader and of a Switchboard
// node during writes loses no acknowledged write (a write whose outcome is unknown fails with
// 503 after the write deadline); a restarted node catches up; a user whose only node dies
// leaves presence within the heartbeat timeout.
import assert from "node:assert/strict";
import { connect } from "nats";
import { RawSocket } from "../helpers/raw_socket.ts";
import type { TestServer } from "../helpers/server.ts";
import { call, sdkFor } from "../pubsub/helpers.ts";
import { startCluster, until } from "./cluster.ts";
import { assertNoLoss, path, writers } from "./writers.ts";

Deno.test({
  name: "cluster faults: leader and node SIGKILL lose no acknowledged write; presence timeout",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const cluster = await startCluster({
      env: {
        SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300",
        SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000",
      },
    });
    const sockets: RawSocket[] = [];
    try {
      await t.step("read-your-writes across nodes; /readyz answers without writing", async () => {
        const [n1, n2] = cluster.nodes;
        const write = await fetch(`${n1.baseUrl}${path("ryw")}/append`, {
          method: "POST",
          headers: n1.headers(),
          body: JSON.stringify({ slot: "l", value: "mine" }),
        });
        assert.equal(write.status, 200);
        await write.body?.cancel();
        const position = Number(write.headers.get("switchboard-position"));
        assert.ok(
          Number.isSafeInteger(position) && position > 0,
          "a write reply carries its log position",
        );
        // A read on another node asking for that position sees the write.
        const read = await fetch(`${n2.baseUrl}${path("ryw")}`, {
          headers: { ...n2.headers(), "Switchboard-Min-Position": String(position) },
        });
        assert.equal(read.status, 200);
        assert.deepEqual((await read.json()).state, { l: ["mine"] });
        // A failed write's reply carries a position too (what the node had applied).
        const refused = await fetch(`${n2.baseUrl}${path("ryw")}/append`, {
          method: "POST",
          headers: n2.headers(),
          body: "{",
        });
        assert.equal(refused.status, 400);
        await refused.body?.cancel();
        assert.ok(Number(refused.headers.get("switchboard-position")) >= position);
        // A position no node has reached: 503 after the write deadline (4 s here).
        const far = position + 1_000_000;
        const late = await fetch(`${n2.baseUrl}${path("ryw")}`, {
          headers: { ...n2.headers(), "Switchboard-Min-Position": String(far) },
        });
        assert.equal(late.status, 503);
        assert.match((await late.json()).error, /not caught up/);
        // Joins: min_position reached joins; one not reached is refused with "not caught up".
        const s = await RawSocket.connect(n2.wsUrl());
        sockets.push(s);
        assert.equal(
          (await s.join("durable:key1:ledger:ryw", {
            app_secret: "secret1",
            min_position: position,
          })).status,
          "ok",
        );
        const behind = await s.join("durable:key1:ledger:ryw2", {
          app_secret: "secret1",
          min_position: far,
        });
        assert.deepEqual([behind.status, behind.response], ["error", { reason: "not caught up" }]);
        // Readiness reads what the node knows: many probes add nothing to the log.
        const applied = async () => {
          const text = await (await fetch(`${n1.baseUrl}/metrics`)).text();
          return Number(text.match(/switchboard_cluster_applied_position\{[^}]*\} (\d+)/)![1]);
        };
        const before = await applied();
        for (let i = 0; i < 20; i++) {
          const r = await fetch(`${cluster.nodes[i % 3].baseUrl}/readyz`);
          assert.deepEqual([r.status, await r.json()], [200, { status: "ready" }]);
        }
        assert.equal(await applied(), before, "no probe wrote to the log");
      });

      await t.step("SIGKILL of the JetStream stream leader during writes", async () => {
        const nc = await connect({ servers: cluster.nats.urls });
        const jsm = await nc.jetstreamManager();
        const info = await jsm.streams.info("SWITCHBOARD");
        await nc.close();
        const leader = Number(info.cluster!.leader!.replace("n", "")) - 1;
        const w = writers(() => cluster.nodes, "leader", 6);
        await until("writes acknowledged before the kill", () => Promise.resolve(w.acked.size > 0));
        const before = w.acked.size;
        await cluster.nats.kill(leader);
        await new Promise((r) => setTimeout(r, 1500));
        await cluster.nats.restart(leader);
        const afterRestart = w.acked.size;
        await until(
          "writes go on after the election",
          () => Promise.resolve(w.acked.size > afterRestart + 20),
        );
        await w.stop();
        assert.ok(before > 0, "writes were acknowledged before the kill");
        for (const node of cluster.nodes) {
          await until("node converged", async () => {
            const r = await call(node, "GET", path("leader"));
            return r.body.log_id >= Math.max(...w.acked.values());
          });
          await assertNoLoss(node, "leader", w);
        }
      });

      await t.step(
        "SIGKILL of a Switchboard node during writes; it restarts and catches up",
        async () => {
          let live = cluster.nodes;
          const w = writers(() => live, "node", 6);
          await new Promise((r) => setTimeout(r, 500));
          await cluster.kill(1);
          live = [cluster.nodes[0], cluster.nodes[2]];
          await new Promise((r) => setTimeout(r, 500));
          const restarted = await cluster.restart(1);
          live = cluster.nodes;
          await until("writes through the restarted node", async () => {
            const r = await call(restarted, "POST", `${path("node")}/append`, {
              slot: "probe",
              value: 1,
            });
            return r.status === 200;
          });
          await w.stop();
          // Nodes apply the log on their own schedule: any of them may be a few writes ahead of
          // the others for a moment. Once writes stop, every node must reach the same head.
          const heads = async () =>
            await Promise.all(
              cluster.nodes.map(async (n) => (await call(n, "GET", path("node"))).body.log_id),
            );
          await until(
            "every node holds the same log",
            async () => new Set(await heads()).size === 1,
          );
          const [head] = await heads();
          assert.ok(
            head >= Math.max(...w.acked.values()),
            "the converged head covers every acknowledged write",
          );
          const list: string[] = (await call(restarted, "GET", path("node"))).body.state.l;
          for (const [value, logId] of w.acked) {
            assert.ok(list.includes(value), `acknowledged ${value} (${logId}) kept`);
          }
          for (const value of list) {
            assert.ok(w.acked.has(value) || w.unknown.has(value));
          }
          assert.deepEqual(w.hung, [], "every write was answered");
        },
      );

      await t.step(
        "a user whose only node dies leaves presence within the heartbeat timeout",
        async () => {
          const topic = "pubsub:key1:presence-crash";
          const sdk = sdkFor(cluster.nodes[0]);
          const enter = async (node: TestServer, userId: string) => {
            const s = await RawSocket.connect(node.wsUrl());
            sockets.push(s);
            const { auth, channel_data } = await sdk.authenticate(s.socketId, "presence-crash", {
              user_id: userId,
            });
            assert.equal((await s.join(topic, { auth, channel_data })).status, "ok");
            return s;
          };
          const observer = await enter(cluster.nodes[0], "observer");
          await enter(cluster.nodes[2], "doomed");
          await observer.waitFor((f) =>
            f[2] === topic && f[3] === "presence:join" && f[4].user_id === "doomed"
          );
          const killedAt = Date.now();
          await cluster.kill(2);
          const left = await observer.waitFor(
            (f) => f[2] === topic && f[3] === "presence:leave",
            5000,
          );
          assert.deepEqual(left[4], { user_id: "doomed" });
          assert.ok(
            Date.now() - killedAt < 3000,
            "left within the heartbeat timeout (3.5 heartbeats)",
          );
          const users = await call(
            cluster.nodes[0],
            "GET",
            "/api/apps/app-1/channels/presence-crash/users",
          );
          assert.deepEqual(users.body, { users: [{ user_id: "observer" }], count: 1 });
        },
      );
    } finally {
      await Promise.all(sockets.map((s) => s.close().catch(() => {})));
      await cluster.stop();
    }
  },
});
