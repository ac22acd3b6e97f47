// Read-your-writes headers on one node (docs/cluster.md "Reads on other nodes, and
// read-your-writes"): `Switchboard-Min-Position` on a read and `min_position` on a join are
// accepted and satisfied at once, whatever the number (one node has no log to wait for); readiness
// answers ready.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";

Deno.test("one node: min positions are accepted and satisfied at once", async () => {
  const server = await startServer();
  const s = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const obj = `${server.baseUrl}/api/v1/objects/app-1/doc/ryw`;
    const put = await fetch(`${obj}/a`, {
      method: "PUT",
      headers: server.headers(),
      body: JSON.stringify({ value: 1 }),
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    const read = await fetch(obj, {
      headers: { ...server.headers(), "Switchboard-Min-Position": "999999999" },
    });
    assert.equal(read.status, 200);
    assert.deepEqual((await read.json()).state, { a: 1 });
    const j = await s.join("durable:key1:doc:ryw", {
      app_secret: "secret1",
      min_position: 999999999,
    });
    assert.equal(j.status, "ok");
    const ready = await fetch(`${server.baseUrl}/readyz`);
    assert.deepEqual([ready.status, await ready.json()], [200, { status: "ready" }]);
  } finally {
    await s.close();
    await server.stop();
  }
});
