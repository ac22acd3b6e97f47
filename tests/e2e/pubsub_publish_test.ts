import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { call, token } from "../pubsub/helpers.ts";

const OPEN: TestApp = { id: "app-1", key: "key1", secret: "secret1", max_client_events_per_sec: 5 };
const OFF: TestApp = { id: "app-2", key: "key2", secret: "secret2", enable_client_messages: false };

Deno.test("client publish: accepted events are serialed and broadcast; every refusal reason", async (t) => {
  const server = await startInProcess({ apps: [OPEN, OFF] });
  const pub = await RawSocket.connect(server.wsUrl("key1"));
  const sub = await RawSocket.connect(server.wsUrl("key1"));
  const off = await RawSocket.connect(server.wsUrl("key2"));
  try {
    const tk = await token(server, OPEN, pub.socketId, [
      "channel:subscribe:private-c",
      "channel:publish:private-c",
      "channel:publish:pub",
    ], "me");
    const j = await pub.join("pubsub:key1:private-c", { auth: tk });
    const subTk = await token(server, OPEN, sub.socketId, ["channel:subscribe:private-c"]);
    const sj = await sub.join("pubsub:key1:private-c", { auth: subTk });
    assert.equal(sj.status, "ok");

    await t.step(
      "accepted: reply { serial }, broadcast with sender, stored in history",
      async () => {
        const r = await pub.push("pubsub:key1:private-c", j.joinRef, "client-typing", { x: 1 });
        assert.deepEqual(r, { status: "ok", response: { serial: 1 } });
        const f = await sub.waitFor((f) => f[3] === "client-typing");
        assert.deepEqual(f[4], {
          serial: 1,
          data: { x: 1 },
          socket_id: pub.socketId,
          client_id: "me",
        });
        // The sender gets its own event too (documented).
        await pub.waitFor((f) => f[3] === "client-typing" && f[0] === null);
        const h = await call(server, "GET", "/api/apps/app-1/channels/private-c/history");
        assert.deepEqual(h.body.items[0].data, { x: 1 });
        assert.equal(h.body.items[0].client_id, "me");
      },
    );
    await t.step("client publish on an ephemeral channel is relayed with serial null", async () => {
      const tk2 = await token(server, OPEN, pub.socketId, ["channel:publish:ephemeral-e"]);
      const pj = await pub.join("pubsub:key1:ephemeral-e", { auth: tk2 });
      assert.equal(pj.status, "ok");
      await sub.join("pubsub:key1:ephemeral-e", {});
      const r = await pub.push("pubsub:key1:ephemeral-e", pj.joinRef, "client-e", { n: 7 });
      assert.deepEqual(r, { status: "ok", response: { serial: null } });
      const f = await sub.waitFor((f) => f[2] === "pubsub:key1:ephemeral-e" && f[3] === "client-e");
      assert.equal((f[4] as any).serial, null);
    });
    await t.step("a token without publish: Channel mode does not permit publishing", async () => {
      const r = await sub.push("pubsub:key1:private-c", sj.joinRef, "client-x", {});
      assert.deepEqual(r, {
        status: "error",
        response: { reason: "Channel mode does not permit publishing" },
      });
    });
    await t.step("anonymous public join has no publish capability", async () => {
      const a = await sub.join("pubsub:key1:pub", {});
      const r = await sub.push("pubsub:key1:pub", a.joinRef, "client-x", {});
      assert.deepEqual(r.response, { reason: "Channel mode does not permit publishing" });
    });
    await t.step("Validation failed: event name and payload size", async () => {
      const long = await pub.push("pubsub:key1:private-c", j.joinRef, "e".repeat(201), {});
      assert.equal(long.status, "error");
      assert.match(String(long.response.reason), /^Validation failed: /);
      const reserved = await pub.push("pubsub:key1:private-c", j.joinRef, "presence:join", {});
      assert.match(String(reserved.response.reason), /^Validation failed: .*reserved/);
      const big = await pub.push("pubsub:key1:private-c", j.joinRef, "client-big", {
        s: "x".repeat(10 * 1024),
      });
      assert.equal(big.response.reason, "Validation failed: payload larger than 10240 bytes");
    });
    await t.step("Rate limit exceeded over max_client_events_per_sec", async () => {
      const replies = await Promise.all(
        Array.from(
          { length: 12 },
          (_, i) => pub.push("pubsub:key1:private-c", j.joinRef, "client-n", { i }),
        ),
      );
      const reasons = replies.filter((r) => r.status === "error").map((r) => r.response.reason);
      assert.ok(reasons.length >= 2);
      assert.ok(reasons.every((r) => r === "Rate limit exceeded"));
    });
    await t.step("Client messages are disabled when the app turns them off", async () => {
      const ok = await token(server, OFF, off.socketId, [
        "channel:subscribe:x",
        "channel:publish:x",
      ]);
      const oj = await off.join("pubsub:key2:x", { auth: ok });
      const r = await off.push("pubsub:key2:x", oj.joinRef, "client-x", {});
      assert.deepEqual(r, {
        status: "error",
        response: { reason: "Client messages are disabled" },
      });
    });
  } finally {
    await pub.close();
    await sub.close();
    await off.close();
    await server.stop();
  }
});
