// The console in clustered mode: every node's console shows each node's charts (from the
// points the nodes keep in the replicated store) and their sum.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startCluster } from "../cluster/cluster.ts";
import { ADMIN_SECRET, call, CONSOLE_APPS, login, until } from "./helpers.ts";

Deno.test({
  name: "console cluster: each node's series and their sum, seen from every node",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cluster = await startCluster({
      nodes: 2,
      apps: CONSOLE_APPS,
      env: { CONSOLE_SECRET: ADMIN_SECRET },
    });
    const sockets: RawSocket[] = [];
    try {
      const [a, b] = cluster.nodes;
      sockets.push(await RawSocket.connect(a.wsUrl("key1")));
      for (let i = 0; i < 2; i++) sockets.push(await RawSocket.connect(b.wsUrl("key2")));
      for (const node of [a, b]) {
        const cookie = await login(node, ADMIN_SECRET);
        assert.equal((await call(node, "/console/api/session", { cookie })).body.clustered, true);
        type View = {
          nodes: Record<string, Record<string, number[]>>;
          sum: Record<string, number[]>;
        };
        // A node stores its point once per 10 s interval: wait for both nodes' points.
        const view = await until(
          async () =>
            (await call(node, "/console/api/cluster/stats", { cookie })).body as unknown as View,
          (v) =>
            v.nodes?.["node-1"]?.connections.includes(1) &&
            v.nodes?.["node-2"]?.connections.includes(2),
          `both nodes' points seen from ${node.baseUrl}`,
          40_000,
        );
        assert.deepEqual(Object.keys(view.nodes), ["node-1", "node-2"]);
        assert.ok(Math.max(...view.sum.connections) >= 2, `sum ${view.sum.connections}`);
        const total = (s: Record<string, number[]>) => s.connections.reduce((x, y) => x + y, 0);
        assert.equal(total(view.sum), total(view.nodes["node-1"]) + total(view.nodes["node-2"]));
      }
      // An app's session does not see the cluster view.
      const app = await login(a, CONSOLE_APPS[0].secret);
      assert.equal((await call(a, "/console/api/cluster/stats", { cookie: app })).status, 404);
    } finally {
      for (const s of sockets) await s.close();
      await cluster.stop();
    }
  },
});
