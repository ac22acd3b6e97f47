// Issue 13: the one join sequence over real sockets (chat joins during a write storm) and the
// SDKs following a purge and a thread re-creation. Validation of after_log_id on every product
// and a hard-deleted thread's new epoch and reset join run in-process in
// tests/harness/chat_test.ts.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, until } from "../chat_live/helpers.ts";
import { ObjectSubscription } from "../../sdk/client/object_subscription.ts";
import { Switchboard } from "../../sdk/server/mod.ts";
import { Socket } from "phoenix";

Deno.test("streams: chat joins during a 20-writer storm always reply with log_id and see exactly 1..N", async () => {
  const server = await startInProcess();
  try {
    await makeThread(server, "storm");
    let writing = true;
    let written = 1; // thread:created
    const writers = Array.from({ length: 20 }, async (_, w) => {
      for (let i = 0; writing && i < 40; i++) {
        const r = await api(
          server,
          "POST",
          "/api/chat/threads/storm/messages",
          doc("messages", { role: "user", content: `${w}.${i}` }, { id: `m-${w}-${i}` }),
        );
        assert.equal(r.status, 201);
        written++;
      }
    });
    const joins = Array.from({ length: 24 }, async (_, j) => {
      const sock = await RawSocket.connect(server.wsUrl("key1"));
      try {
        await new Promise((r) => setTimeout(r, j * 8));
        const reply = await sock.join("chat:key1:storm", { client_id: `v${j}`, after_log_id: 0 });
        assert.equal(reply.status, "ok");
        const n = reply.response.log_id as number;
        assert.equal(typeof n, "number", `join ${j} replied ${JSON.stringify(reply.response)}`);
        assert.ok(Array.isArray(reply.response.messages) && Array.isArray(reply.response.runs));
        return { sock, n };
      } catch (err) {
        await sock.close();
        throw err;
      }
    });
    const joined = await Promise.all(joins);
    writing = false;
    await Promise.all(writers);
    try {
      for (const { sock } of joined) {
        await sock.waitFor(() =>
          sock.frames.filter((f) => typeof f[4]?.log_id === "number" && f[3] !== "phx_reply")
            .length >= written
        );
        const ids = sock.frames.filter((f) =>
          f[3] !== "phx_reply" && typeof f[4]?.log_id === "number"
        )
          .map((f) => f[4].log_id as number);
        assert.deepEqual(ids, Array.from({ length: written }, (_, i) => i + 1));
      }
    } finally {
      for (const { sock } of joined) await sock.close();
    }
  } finally {
    await server.stop();
  }
});

Deno.test({
  name: "streams: the SDKs follow a purge and a thread re-creation without a gap",
  // phoenix's Socket keeps reconnect timers of its own after disconnect().
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startInProcess();
  const ws = new Socket(`ws://127.0.0.1:${server.port}/socket`, { params: { app_key: "key1" } });
  const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key1", appSecret: "secret1" });
  const chat = client(server);
  try {
    const obj = `${server.baseUrl}/api/v1/objects/app-1/sdk/epoch`;
    const put = (slot: string, value: unknown) =>
      fetch(`${obj}/${slot}`, {
        method: "PUT",
        headers: server.headers(),
        body: JSON.stringify({ value }),
      })
        .then((r) => r.body?.cancel());
    await put("a", 1);
    const sub = new ObjectSubscription(
      ws,
      "key1",
      "sdk",
      "epoch",
      async (socketId) => (await sb.authenticateObject(socketId, "sdk", "epoch")).auth,
    );
    ws.connect(); // after the subscription, which learns the socket id from the first frame
    await until(() => sub.logId === 1, "object synced");
    await fetch(obj, { method: "DELETE", headers: server.headers() }).then((r) => r.body?.cancel());
    await until(() => sub.logId === 0 && sub.epoch !== "0", "purge seen");
    await put("b", 2);
    await until(
      () => sub.logId === 1 && (sub.state as Record<string, unknown>).b === 2,
      "new epoch write",
    );
    assert.deepEqual(sub.state, { b: 2 });

    await makeThread(server, "sdk-t");
    const session = await chat.connect("sdk-t", { clientId: "alice" });
    await session.view.send("first life");
    await until(() => session.view.getMessages().length >= 1, "message");
    assert.equal((await api(server, "DELETE", "/api/chat/threads/sdk-t")).status, 204);
    await until(
      () => session.view.getMessages().length === 0 && session.view.logId === 0,
      "thread deleted",
    );
    await makeThread(server, "sdk-t");
    await api(
      server,
      "POST",
      "/api/chat/threads/sdk-t/messages",
      doc("messages", { role: "user", content: "second life" }, { id: "s2" }),
    );
    await until(() => session.view.logId === 2, "new thread entries applied");
    assert.deepEqual(session.view.getMessages().map((m) => m.content), ["second life"]);
    session.close();
    sub.close();
  } finally {
    chat.disconnect();
    ws.disconnect();
    await server.stop();
  }
});
