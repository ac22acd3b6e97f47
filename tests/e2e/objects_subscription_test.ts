// The official phoenix client with ObjectSubscription keeps an exact, up-to-date copy of an
// object across forced reconnects while writes keep coming.
import assert from "node:assert/strict";
import { Socket } from "phoenix";
import { startInProcess } from "../helpers/in_process.ts";
import { Switchboard } from "../../sdk/server/mod.ts";
import {
  objectAuthBody,
  type ObjectChange,
  ObjectSubscription,
} from "../../sdk/client/object_subscription.ts";

async function until(what: string, pred: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test({
  name:
    "`ObjectSubscription` stays exact across socket.disconnect()/connect() and a killed transport",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const server = await startInProcess();
    const socket = new Socket(server.baseUrl.replace("http", "ws") + "/socket", {
      params: { app_key: "key1" },
      reconnectAfterMs: () => 20,
    });
    try {
      const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key1", appSecret: "secret1" });
      const obj = sb.objects("board", "b:1");
      const authSockets: string[] = [];
      const sub = new ObjectSubscription(socket, "key1", "board", "b:1", async (socketId) => {
        authSockets.push(objectAuthBody(socketId, "board", "b:1").socket_id);
        return (await sb.authenticateObject(socketId, "board", "b:1")).auth;
      });
      const seen: number[] = [];
      const snapshots: number[] = [];
      sub.on("change", (c: ObjectChange) => {
        if (c.type === "change" || c.type === "batch") seen.push(c.log_id);
        if (c.type === "snapshot") snapshots.push(c.log_id);
      });
      socket.connect();
      await sub.whenSynced();
      assert.deepEqual(sub.state, {});
      assert.equal(sub.logId, 0);

      const N = 240;
      let written = 0;
      const writer = (async () => {
        while (written < N) {
          const i = ++written;
          if (i % 4 === 0) await obj.patch({ last: i, [`s${i % 5}`]: i });
          else if (i % 4 === 1) await obj.increment("n");
          else if (i % 4 === 2) await obj.append("list", i);
          else {await obj.transaction([{ op: "increment", key: "n", by: 2 }, {
              op: "delete",
              key: `s${i % 5}`,
            }]);}
        }
      })();

      await until("first writes", () => sub.logId >= 40);
      socket.disconnect();
      socket.connect();
      await until("writes after the reconnect", () => sub.logId >= 120 && snapshots.length >= 2);

      // Kill the transport under phoenix: it reconnects by itself.
      (socket as unknown as { conn: WebSocket }).conn.close(4000, "killed by test");
      await until(
        "writes after the second reconnect",
        () => sub.logId >= 200 && snapshots.length >= 3,
      );
      await writer;
      await until("the last write", () => sub.logId === N);

      const truth = await obj.get();
      assert.equal(truth.log_id, N);
      assert.deepEqual(sub.state, truth.state);
      assert.deepEqual(
        seen,
        Array.from({ length: N }, (_, i) => i + 1),
        "every write exactly once",
      );
      assert.ok(new Set(authSockets).size >= 3, "a fresh token per socket id");

      await obj.purge();
      await until("the purge", () => sub.logId === 0 && Object.keys(sub.state).length === 0);
      await obj.set("after", 1);
      await until("a write after the purge", () => sub.logId === 1);
      assert.deepEqual(sub.state, { after: 1 });

      // A refused join is reported as an error and not retried with the same token.
      const errors: string[] = [];
      const denied = new ObjectSubscription(
        socket,
        "key1",
        "board",
        "other",
        async (socketId) => (await sb.authenticateObject(socketId, "board", "b:1")).auth,
        { socketId: () => authSockets.at(-1) },
      );
      denied.on("error", (reason) => errors.push(reason));
      await until("the refusal", () => errors.length > 0);
      assert.deepEqual(errors, ["forbidden: missing object:read:board/other"]);
      denied.close();
      sub.close();
    } finally {
      socket.disconnect();
      await server.stop();
    }
  },
});
