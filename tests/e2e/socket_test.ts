import assert from "node:assert/strict";
import { Socket } from "phoenix";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";

Deno.test("socket: first frame, heartbeat, topic errors and malformed frames over a real server", async () => {
  const server = await startServer();
  try {
    const sock = await RawSocket.connect(server.wsUrl("key1"));
    assert.match(sock.socketId, /^\d+\.\d+$/);
    assert.deepEqual(sock.frames[0], [null, null, "phoenix", "connected", {
      socket_id: sock.socketId,
    }]);

    const ref = sock.send(null, "phoenix", "heartbeat", {});
    const hb = await sock.waitFor((f) => f[1] === ref);
    assert.deepEqual(hb, [null, ref, "phoenix", "phx_reply", { status: "ok", response: {} }]);

    assert.deepEqual((await sock.join("pubsub:key2:news")).response, {
      reason: "app_key mismatch",
    });
    assert.deepEqual((await sock.join("pubsub:key1")).response, { reason: "invalid topic format" });
    assert.deepEqual((await sock.join("other:key1:x")).response, {
      reason: "invalid topic format",
    });
    assert.deepEqual((await sock.join("durable:key1:typeonly")).response, {
      reason: "invalid topic format",
    });

    sock.sendRaw("{not json");
    const err = await sock.waitFor((f) => f[3] === "phx_error");
    assert.deepEqual(err[4], { reason: "malformed frame: not JSON" });
    sock.sendRaw(JSON.stringify(["1", "2", "t"]));
    await sock.waitFor((f) =>
      f[3] === "phx_error" && String(f[4].reason).includes("expected [join_ref")
    );

    // Another socket is unaffected and the server still answers.
    const other = await RawSocket.connect(server.wsUrl("key2"));
    assert.notEqual(other.socketId, sock.socketId);
    const r2 = other.send(null, "phoenix", "heartbeat", {});
    await other.waitFor((f) => f[1] === r2 && f[3] === "phx_reply");
    await sock.close();
    await other.close();
  } finally {
    await server.stop();
  }
});

Deno.test("socket: unknown or missing app_key is refused with 401 at upgrade", async () => {
  const server = await startServer();
  try {
    for (const url of [server.wsUrl("nope"), server.wsUrl("").replace("app_key=&", "")]) {
      const res = await fetch(url.replace("ws://", "http://"), {
        headers: {
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        },
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    }
    await assert.rejects(RawSocket.connect(server.wsUrl("nope")));
  } finally {
    await server.stop();
  }
});

Deno.test("socket: MessagePack format round-trips binary frames", async () => {
  const server = await startServer();
  try {
    const sock = await RawSocket.connect(server.wsUrl("key1", "&format=msgpack"));
    assert.ok(sock.socketId);
    const ref = sock.send(null, "phoenix", "heartbeat", {});
    assert.deepEqual(await sock.waitFor((f) => f[1] === ref), [null, ref, "phoenix", "phx_reply", {
      status: "ok",
      response: {},
    }]);
    assert.deepEqual((await sock.join("pubsub:other:x")).response, { reason: "app_key mismatch" });
    await sock.close();
  } finally {
    await server.stop();
  }
});

Deno.test("socket: a silent socket is closed after the idle timeout", async () => {
  const server = await startServer({ args: ["--idle-timeout", "1"] });
  try {
    const sock = await RawSocket.connect(server.wsUrl("key1"));
    const ev = await sock.closed(5000);
    assert.equal(ev.code, 4000);
    assert.match(ev.reason, /idle timeout/);
  } finally {
    await server.stop();
  }
});

Deno.test("socket: the official phoenix client connects and keeps a heartbeat", async () => {
  const server = await startServer();
  try {
    const socket = new Socket(`${server.baseUrl.replace("http", "ws")}/socket`, {
      params: { app_key: "key1" },
      heartbeatIntervalMs: 100,
    });
    const opened = new Promise<void>((r) => socket.onOpen(() => r()));
    let connectedId = "";
    socket.onMessage((msg) => {
      const m = msg as { topic: string; event: string; payload: { socket_id?: string } };
      if (m.topic === "phoenix" && m.event === "connected") connectedId = m.payload.socket_id ?? "";
    });
    socket.connect();
    await opened;
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(connectedId.length > 0);
    assert.equal(socket.isConnected(), true);
    socket.disconnect(() => {}, 1000, "done");
  } finally {
    await server.stop();
  }
});
