// Issue 12 item 9: an agent's token stream becomes the final message's content, so it is capped
// like content (256 KiB in UTF-8 bytes): the token that would pass the cap is refused with a
// reason, the run still ends, and the stored message holds exactly what was accepted.
import assert from "node:assert/strict";
import { api } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";

Deno.test("stream cap: tokens beyond 256 KiB are refused with a reason; the run ends with the rest", async () => {
  const server = await startServer();
  const human = await RawSocket.connect(server.wsUrl("key1"));
  const agent = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const topic = "chat:key1:flux-ü";
    const h = await human.join(topic, { client_id: "alice" });
    const sent = await human.push(topic, h.joinRef, "send", { content: "hi", messageId: "m1", runId: "r1" });
    assert.equal(sent.status, "ok", JSON.stringify(sent.response));
    const a = await agent.join(topic, { agent_secret: "secret1", agent_id: "bot" });
    assert.equal(a.status, "ok", JSON.stringify(a.response));
    assert.equal((await agent.push(topic, a.joinRef, "run:start", { runId: "r1" })).status, "ok");
    // 40,000 three-byte characters: 120,000 bytes (40,000 UTF-16 units) per token.
    const chunk = "語".repeat(40_000);
    for (let i = 0; i < 2; i++) {
      const t = await agent.push(topic, a.joinRef, "token", { runId: "r1", text: chunk });
      assert.equal(t.status, "ok", JSON.stringify(t.response));
    }
    const over = await agent.push(topic, a.joinRef, "token", { runId: "r1", text: chunk });
    assert.deepEqual(over, { status: "error", response: { reason: "invalid_request: stream is larger than 262144 bytes" } });
    // A small token still fits under the cap.
    assert.equal((await agent.push(topic, a.joinRef, "token", { runId: "r1", text: "!" })).status, "ok");
    const end = await agent.push(topic, a.joinRef, "run:end", { runId: "r1", reason: "complete" });
    assert.equal(end.status, "ok", JSON.stringify(end.response));
    const list = await api(server, "GET", `/api/chat/threads/${encodeURIComponent("flux-ü")}/messages`);
    assert.equal(list.status, 200);
    const reply = (list.body.data as any[]).find((m) => m.attributes.role === "assistant");
    assert.equal(reply.attributes.run_id, "r1");
    assert.equal(reply.attributes.content, chunk + chunk + "!");
    assert.equal(reply.attributes.status, "complete");
  } finally {
    await human.close();
    await agent.close();
    await server.stop();
  }
});
