// A node fed another message at one log position (as by a NATS stream replica that diverged, which
// nats-server 2.9.10 does after a stream leader is frozen and resumed: docs/cluster-internals.md)
// finds out from the other nodes' reports, stops taking writes and says so on /readyz; the others
// keep acknowledging, hold every acknowledged write, and never take a write set the odd node
// speculated on its other history.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import { startForkedCluster, until } from "./cluster.ts";
import { assertNoLoss, path, writers } from "./writers.ts";

const FORK_AT = 40;

Deno.test({
  name: "cluster divergence: the odd node stops; the majority keeps every acknowledged write",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Node 3 would rebuild its store a second after it stops (self_heal_test.ts): here it
    // waits, so what it does while stopped is seen.
    const cluster = await startForkedCluster({
      SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
      SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "600000",
    });
    try {
      const [n1, n2, n3] = cluster.nodes;
      const w = writers(() => cluster.nodes, "fork", 6);
      await until("node 3 stops as diverged", async () => {
        const r = await fetch(`${n3.baseUrl}/readyz`);
        const body = await r.json();
        return r.status === 503 &&
          /applied the log differently from a majority of the nodes/.test(body.reason);
      });
      const at = w.acked.size;
      await until(
        "nodes 1 and 2 keep acknowledging",
        () => Promise.resolve(w.acked.size > at + 30),
      );
      await w.stop();

      // Node 3 refuses writes at once, with the reason.
      const refused = await call(n3, "POST", `${path("fork")}/append`, {
        slot: "l",
        value: "late",
      });
      assert.equal(refused.status, 503);
      assert.match(JSON.stringify(refused.body), /applied the log differently/);
      for (const node of [n1, n2]) {
        assert.equal((await fetch(`${node.baseUrl}/readyz`)).status, 200);
      }
      // Nodes 1 and 2 agree and hold every acknowledged write where its reply said.
      await until("nodes 1 and 2 converged", async () => {
        const [a, b] = await Promise.all([
          call(n1, "GET", path("fork")),
          call(n2, "GET", path("fork")),
        ]);
        return JSON.stringify(a.body) === JSON.stringify(b.body);
      });
      for (const node of [n1, n2]) await assertNoLoss(node, "fork", w);
      assert.ok(w.acked.size > 30);
      // Node 3 stopped applying on its other history: its state differs from the majority's.
      const odd = await call(n3, "GET", path("fork"));
      const good = await call(n1, "GET", path("fork"));
      assert.notDeepEqual(odd.body.state, good.body.state);
      assert.match(n1.output(), /cluster node applied the log differently.*node-3/);
    } finally {
      await cluster.stop();
    }
  },
});
