// Issue 12 items 7 and 8: object capabilities are unambiguous (types hold no `/` or `:`), a
// trailing `*` after any prefix is a prefix grant, and a needed resource holding `*` is a
// literal name matched by `*` grants and the built-in grant sets.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { call, sdkFor, token } from "../pubsub/helpers.ts";

Deno.test("capabilities: object types with / or : are refused everywhere; a/b/c means type a, key b/c", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    for (const type of ["order%2Fsecret", "a%3Ab"]) {
      const r = await call(server, "PUT", `/api/v1/objects/app-1/${type}/k/slot`, { value: 1 });
      assert.deepEqual(r, { status: 422, body: { error: 'object type must not contain "/" or ":"' } });
    }
    assert.equal((await call(server, "PUT", "/api/v1/objects/app-1/a/b%2Fc/slot", { value: 1 })).status, 200);
    assert.throws(() => sdkFor(server).objects("a/b", "c"), TypeError);

    const app = server.apps[0];
    const exact = await token(server, app, sock.socketId, ["object:read:a/b/c"]);
    assert.equal((await sock.join("durable:key1:a:b/c", { auth: exact })).status, "ok");
    assert.deepEqual((await sock.join("durable:key1:a/b:c", { auth: exact })).response, { reason: "invalid topic format" });
    const prefix = await token(server, app, sock.socketId, ["object:read:order/*"]);
    assert.equal((await sock.join("durable:key1:order:1", { auth: prefix })).status, "ok");
    assert.deepEqual((await sock.join("durable:key1:order/secret:1", { auth: prefix })).response, { reason: "invalid topic format" });
    assert.deepEqual((await sock.join("durable:key1:orders:1", { auth: prefix })).response, { reason: "forbidden: missing object:read:orders/1" });
  } finally {
    await sock.close();
    await server.stop();
  }
});

Deno.test("capabilities: prefix grants on channels; a * inside a grant is malformed at issuance", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const app = server.apps[0];
    const tk = await token(server, app, sock.socketId, ["channel:subscribe:private-user-42-*"]);
    assert.equal((await sock.join("pubsub:key1:private-user-42-inbox", { auth: tk })).status, "ok");
    assert.deepEqual(
      (await sock.join("pubsub:key1:private-user-43-inbox", { auth: tk })).response,
      { reason: "forbidden: missing channel:subscribe:private-user-43-inbox" },
    );
    const issue = (capabilities: string[]) =>
      call(server, "POST", "/api/auth", { socket_id: sock.socketId, client_id: "u", capabilities });
    assert.equal((await issue(["channel:subscribe:private-*"])).status, 200);
    assert.equal((await issue(["channel:subscribe:a*b"])).status, 422);
    assert.equal((await issue(["object:read:order/*/x"])).status, 422);
  } finally {
    await sock.close();
    await server.stop();
  }
});

Deno.test("capabilities: a thread id holding * is a literal name for built-in grants and * grants", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  const sock2 = await RawSocket.connect(server.wsUrl("key2"));
  try {
    // App auth off: the anonymous default set names the thread exactly.
    const topic = "chat:key1:t*1";
    const j = await sock.join(topic, { client_id: "alice" });
    assert.equal(j.status, "ok", JSON.stringify(j.response));
    const sent = await sock.push(topic, j.joinRef, "send", { content: "hi", messageId: "m1", runId: "r1", parentId: null });
    assert.equal(sent.status, "ok", JSON.stringify(sent));
    // Agents too.
    const agent = await RawSocket.connect(server.wsUrl("key1"));
    try {
      const a = await agent.join(topic, { agent_secret: "secret1", agent_id: "bot" });
      assert.equal(a.status, "ok");
      assert.equal((await agent.push(topic, a.joinRef, "run:start", { runId: "r1" })).status, "ok");
    } finally {
      await agent.close();
    }
    // App auth on: a lone * grant and a prefix grant match the literal name; an exact other does not.
    const app2 = server.apps[1];
    const t2 = "chat:key2:t*1";
    for (const [caps, ok] of [[["chat:subscribe:*"], true], [["chat:subscribe:t*"], true], [["chat:subscribe:t1"], false]] as const) {
      const tk = await token(server, app2, sock2.socketId, [...caps], "bob");
      const r = await sock2.join(t2, { auth: tk });
      assert.equal(r.status, ok ? "ok" : "error", `${caps}: ${JSON.stringify(r.response)}`);
    }
  } finally {
    await sock.close();
    await sock2.close();
    await server.stop();
  }
});
