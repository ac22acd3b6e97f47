// Issue 12 item 4: a subscriber that stops reading is closed with 4008 and a reason (never a
// silent gap), and a reading client replays a backlog far larger than the send buffer bound.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { TcpWebSocket } from "../helpers/tcp_websocket.ts";

/** Object writes of 250 KB each in the replay test: a backlog of about 120 MB. */
const OBJECT_WRITES = 480;
/** How long the replay test waits for a reply or frame: 120 MB through a loaded machine. */
const REPLAY_WAIT_MS = 120_000;

/** Triggers `count` events of about `bytes` each on `channel`, `parallel` at a time. */
async function flood(
  server: TestServer,
  channel: string,
  count: number,
  bytes: number,
  parallel = 8,
) {
  const data = "x".repeat(bytes);
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      next++;
      const res = await fetch(`${server.baseUrl}/api/apps/app-1/trigger`, {
        method: "POST",
        headers: server.headers(),
        body: JSON.stringify({ channel, event: "e", data }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
  }));
}

Deno.test("backpressure: a subscriber that stops reading is closed with 4008 and the reason, after a gap-free prefix", async () => {
  const server = await startServer();
  const ws = await TcpWebSocket.open(server.port, "/socket/websocket?app_key=key1&vsn=2.0.0");
  try {
    ws.sendText(JSON.stringify(["1", "1", "pubsub:key1:flood", "phx_join", {}]));
    for (let f = await ws.next();; f = await ws.next()) {
      if (f && f.payload.toString().includes("phx_reply")) break;
    }
    ws.pause();
    await flood(server, "flood", 600, 60_000); // ~36 MB, far past kernel buffers + 8 MiB
    ws.resume();
    const serials: number[] = [];
    let close: { code: number; reason: string } | undefined;
    for (let f = await ws.next(); f; f = await ws.next()) {
      if (f.opcode === 8) {
        close = { code: f.payload.readUInt16BE(0), reason: f.payload.subarray(2).toString() };
        break;
      }
      const frame = JSON.parse(f.payload.toString());
      if (frame[3] === "e") serials.push(frame[4].serial);
    }
    assert.deepEqual(close, { code: 4008, reason: "slow consumer: send buffer limit exceeded" });
    assert.ok(serials.length > 0 && serials.length < 600, `saw ${serials.length} events`);
    assert.deepEqual(serials, Array.from({ length: serials.length }, (_, i) => i + 1));
  } finally {
    ws.destroy();
    await server.stop();
  }
});

Deno.test("backpressure: a reading client replays a 120 MB object log and a 20 MB channel history, then goes live", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const value = "v".repeat(250_000);
    const obj = `${server.baseUrl}/api/v1/objects/app-1/big/log`;
    for (let i = 0; i < OBJECT_WRITES; i++) {
      const res = await fetch(`${obj}/slot`, {
        method: "PUT",
        headers: server.headers(),
        body: JSON.stringify({ value: `${i}${value}` }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    await flood(server, "history", 330, 60_000);

    const topic = "durable:key1:big:log";
    const joined = await sock.join(
      topic,
      { app_secret: "secret1", after_log_id: 0 },
      REPLAY_WAIT_MS,
    );
    assert.equal(joined.status, "ok");
    assert.equal(joined.response.log_id, OBJECT_WRITES);
    const changes = sock.events(topic, "change").map((f) => f[4].log_id as number);
    assert.deepEqual(changes, Array.from({ length: OBJECT_WRITES }, (_, i) => i + 1));

    const channel = "pubsub:key1:history";
    const j2 = await sock.join(channel, { after_serial: 0 }, REPLAY_WAIT_MS);
    assert.equal(j2.status, "ok");
    assert.equal(j2.response.replay, "complete");
    const serials = sock.events(channel, "e").map((f) => f[4].serial as number);
    assert.deepEqual(serials, Array.from({ length: 330 }, (_, i) => i + 1));

    // Live delivery follows on both topics.
    await fetch(`${obj}/slot`, { method: "PUT", headers: server.headers(), body: '{"value":1}' })
      .then((r) => r.body?.cancel());
    await sock.waitFor(
      (f) => f[2] === topic && f[3] === "change" && f[4].log_id === OBJECT_WRITES + 1,
      REPLAY_WAIT_MS,
    );
    await flood(server, "history", 1, 10);
    await sock.waitFor((f) => f[2] === channel && f[4].serial === 331, REPLAY_WAIT_MS);
  } finally {
    await sock.close();
    await server.stop();
  }
});
