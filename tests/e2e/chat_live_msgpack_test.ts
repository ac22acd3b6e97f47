import assert from "node:assert/strict";
import { Switchboard } from "../../sdk/server/mod.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "../chat_live/helpers.ts";

Deno.test("MessagePack mode: a streamed conversation over binary frames, agent in JSON", async () => {
  const server = await startInProcess();
  const human = client(server, { messageFormat: "msgpack" });
  const viewer = client(server, { serializer: "msgpack" });
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "a" });
    const s = await human.connect(thread, { clientId: "alice" });
    const v = await viewer.connect(thread, { clientId: "vic" });
    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      for (const w of ["ü", "ñ ", "😀 ", "bytes"]) await agent.token(run.runId, w);
      await agent.end(run.runId);
    });
    assert.match(human.socket.endPointURL(), /format=msgpack/);
    const run = await s.view.send({ text: "structured content", n: 1 });
    await until(() => v.view.run(run.runId)?.status === "complete", "complete");
    assert.deepEqual(v.view.getMessages()[0].content, { text: "structured content", n: 1 });
    assert.equal(v.view.getMessages()[1].content, "üñ 😀 bytes");
    await until(() => s.view.logId === v.view.logId, "same position");
    assert.deepEqual(s.view.getChannelMessages(), v.view.getChannelMessages());
  } finally {
    for (const c of [human, viewer, bot]) c.disconnect();
    await server.stop();
  }
});

Deno.test("authEndpoint: POSTs { socket_id, thread_id, client_id } plus authParams with authHeaders", async () => {
  const server = await startInProcess();
  const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key2", appSecret: "secret2" });
  const seen: { body: Record<string, unknown>; header: string | null }[] = [];
  const ac = new AbortController();
  const endpoint = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    async (req) => {
      const body = await req.json();
      seen.push({ body, header: req.headers.get("x-session") });
      const r = await sb.authenticateChat(body.socket_id, body.thread_id, body.client_id);
      return Response.json(r);
    },
  );
  const human = client(server, {
    appKey: "key2",
    authEndpoint: `http://127.0.0.1:${endpoint.addr.port}/chat-auth`,
    authHeaders: { "x-session": "s3cret-cookie" },
    authParams: { extra: 1 },
  });
  try {
    const thread = tid();
    const s = await human.connect(thread, { clientId: "alice" });
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0].body, {
      extra: 1,
      socket_id: human.socketId,
      thread_id: thread,
      client_id: "alice",
    });
    assert.equal(seen[0].header, "s3cret-cookie");
    await s.view.send("authenticated");
    // A reconnect gets a fresh token for the new socket id.
    const joined = new Promise((r) => s.on("joined", r));
    (human.socket as any).conn.close();
    await joined;
    assert.equal(seen.length, 2);
    assert.notEqual(seen[1].body.socket_id, seen[0].body.socket_id);
    assert.equal(seen[1].body.socket_id, human.socketId);
    assert.equal(s.view.getMessages()[0].content, "authenticated");
  } finally {
    human.disconnect();
    ac.abort();
    await endpoint.finished;
    await server.stop();
  }
});
