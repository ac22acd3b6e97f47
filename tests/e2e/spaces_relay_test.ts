import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { token } from "../pubsub/helpers.ts";

Deno.test("spaces: members in the reply, enter/leave events, pushes relayed as-is to the others", async () => {
  const server = await startServer();
  const a = await RawSocket.connect(server.wsUrl("key1"));
  const b = await RawSocket.connect(server.wsUrl("key1"));
  const topic = "spaces:key1:board:1";
  try {
    const ja = await a.join(topic, { client_id: "ann", data: { color: "red" } });
    assert.deepEqual(ja.response, { members: [{ socket_id: a.socketId, client_id: "ann", data: { color: "red" } }] });
    const jb = await b.join(topic, {});
    assert.equal((jb.response.members as unknown[]).length, 2);
    const enter = await a.waitFor((f) => f[2] === topic && f[3] === "member:enter");
    assert.deepEqual(enter[4], { socket_id: b.socketId, client_id: null, data: null });
    assert.equal(b.events(topic, "member:enter").length, 0);

    const r = await b.push(topic, jb.joinRef, "cursor", { x: 1, y: 2 });
    assert.deepEqual(r, { status: "ok", response: {} });
    const moved = await a.waitFor((f) => f[2] === topic && f[3] === "cursor");
    assert.deepEqual(moved[4], { x: 1, y: 2 });
    assert.equal(b.events(topic, "cursor").length, 0);

    const reserved = await b.push(topic, jb.joinRef, "member:enter", {});
    assert.match(String(reserved.response.reason), /^Validation failed: /);
    const big = await b.push(topic, jb.joinRef, "blob", { s: "x".repeat(11_000) });
    assert.equal(big.response.reason, "Validation failed: payload larger than 10240 bytes");

    await b.close();
    const leave = await a.waitFor((f) => f[2] === topic && f[3] === "member:leave");
    assert.deepEqual(leave[4], { socket_id: b.socketId, client_id: null, data: null });
  } finally {
    await a.close();
    await b.close();
    await server.stop();
  }
});

Deno.test("spaces: with app auth on a join needs a token with channel:subscribe:{space}", async () => {
  const server = await startServer();
  const s = await RawSocket.connect(server.wsUrl("key2"));
  const app2 = server.apps[1];
  try {
    assert.deepEqual((await s.join("spaces:key2:room", {})).response, { reason: "forbidden: missing channel:subscribe:room" });
    assert.deepEqual((await s.join("spaces:key2:room", { auth: "bad" })).response, { reason: "invalid token" });
    const other = await token(server, app2, s.socketId, ["channel:subscribe:other"]);
    assert.deepEqual((await s.join("spaces:key2:room", { auth: other })).response, { reason: "forbidden: missing channel:subscribe:room" });
    const tk = await token(server, app2, s.socketId, ["channel:subscribe:room"], "u9");
    const ok = await s.join("spaces:key2:room", { auth: tk, client_id: "ignored" });
    assert.deepEqual(ok.response, { members: [{ socket_id: s.socketId, client_id: "u9", data: null }] });
  } finally {
    await s.close();
    await server.stop();
  }
});
