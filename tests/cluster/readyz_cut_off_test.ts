// Readiness of a node cut off from the log (issue 35, docs/cluster.md "Readiness"): node 3 is given
// only the third nats-server, which is then frozen (SIGSTOP: its connections stay open and go
// silent). Node 3's `/readyz` turns 503 with the reason, while nodes 1 and 2 (on the other two
// servers) answer 200 at every probe; once the server resumes, node 3 is ready again and its
// writes reach the other nodes.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import { startCluster, until } from "./cluster.ts";

const OBJECT = "/api/v1/objects/app-1/cut/off";

Deno.test({
  name:
    "cluster readiness: a node cut off from the log answers /readyz 503 while the others stay 200",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cluster = await startCluster({ nodeNats: (i) => (i === 2 ? [2] : [0, 1]) });
    try {
      const [n1, n2, n3] = cluster.nodes;
      const ready = async (node: typeof n1) => {
        const r = await fetch(`${node.baseUrl}/readyz`);
        return { status: r.status, body: await r.json() as { reason?: string } };
      };
      for (const node of cluster.nodes) assert.equal((await ready(node)).status, 200);
      assert.equal((await call(n3, "POST", `${OBJECT}/increment`, { slot: "n" })).status, 200);

      cluster.nats.signal(2, "SIGSTOP");
      let cutOff: { status: number; body: { reason?: string } } | undefined;
      await until("node 3 reports it is cut off", async () => {
        cutOff = await ready(n3);
        return cutOff.status === 503;
      });
      assert.match(cutOff!.body.reason ?? "", /^cluster unavailable: not connected to NATS$/);
      // The others stay ready throughout: probed every 250 ms for 6 s.
      for (let i = 0; i < 24; i++) {
        for (const node of [n1, n2]) {
          const r = await ready(node);
          assert.equal(
            r.status,
            200,
            `node ${node === n1 ? 1 : 2} while node 3 is cut off: ${JSON.stringify(r.body)}`,
          );
        }
        assert.equal((await ready(n3)).status, 503, "node 3 stays unready while cut off");
        await new Promise((r) => setTimeout(r, 250));
      }

      cluster.nats.signal(2, "SIGCONT");
      await until("node 3 is ready again", async () => (await ready(n3)).status === 200);
      assert.equal((await call(n3, "POST", `${OBJECT}/increment`, { slot: "n" })).status, 200);
      await until("node 1 holds node 3's writes", async () => {
        const got = await call(n1, "GET", OBJECT);
        return (got.body as { state?: { n?: number } }).state?.n === 2;
      });
    } finally {
      cluster.nats.signal(2, "SIGCONT");
      await cluster.stop();
    }
  },
});
