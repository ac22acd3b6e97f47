import assert from "node:assert/strict";
import { ChatClient, RealtimeClient } from "../../sdk/client/mod.ts";
import { Switchboard } from "../../sdk/server/mod.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { tid, until } from "../chat_live/helpers.ts";

Deno.test("ChatClient reuses a RealtimeClient socket (realtime option) with token auth", async () => {
  const server = await startInProcess();
  const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key2", appSecret: "secret2" });
  const rt = new RealtimeClient("key2", { endpoint: `ws://127.0.0.1:${server.port}/socket` });
  try {
    await until(() => rt.socketId, "realtime connected");
    const chat = new ChatClient("key2", {
      realtime: rt,
      authCallback: (p) => sb.authenticateChat(p.socket_id, p.thread_id, p.client_id),
    });
    assert.equal(chat.socket, rt.socket);
    assert.equal(chat.socketId, rt.socketId);
    const thread = tid();
    const s = await chat.connect(thread, { clientId: "alice" });
    const run = await s.view.send("over a shared socket");
    assert.equal(s.view.run(run.runId)?.status, "pending");
    assert.equal(s.view.getMessages()[0].content, "over a shared socket");
    s.close();
  } finally {
    rt.disconnect();
    await server.stop();
  }
});
