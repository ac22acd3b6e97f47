import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "../chat_live/helpers.ts";

const JSONAPI = "application/vnd.api+json";

Deno.test("a message sent live is visible over REST, and a REST message appears live", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "a" });
    const s = await human.connect(thread, { clientId: "alice" });
    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      await agent.token(run.runId, "hi there");
      await agent.end(run.runId);
    });
    const run = await s.view.send("hello over the socket", { messageId: "live-1" });
    await until(() => s.view.run(run.runId)?.status === "complete", "complete");

    const headers = { ...server.headers(), accept: JSONAPI };
    const res = await fetch(`${server.baseUrl}/api/chat/threads/${thread}/messages`, { headers });
    assert.equal(res.status, 200);
    const body = await res.json();
    const items = body.data as { id: string; attributes: Record<string, unknown> }[];
    assert.deepEqual(
      items.map((m) => [m.id, m.attributes.role, m.attributes.content, m.attributes.status]),
      [
        ["live-1", "user", "hello over the socket", "complete"],
        [
          s.view.getMessages()[1].messageId,
          "assistant",
          "hi there",
          "complete",
        ],
      ],
    );
    assert.equal(items[1].attributes.parent_id, "live-1");
    assert.equal(items[1].attributes.run_id, run.runId);

    const post = await fetch(`${server.baseUrl}/api/chat/threads/${thread}/messages`, {
      method: "POST",
      headers: { ...server.headers(), "content-type": JSONAPI, accept: JSONAPI },
      body: JSON.stringify({
        data: {
          type: "messages",
          id: "rest-1",
          attributes: { role: "assistant", content: "posted over REST", parent_id: items[1].id },
        },
      }),
    });
    assert.equal(post.status, 201);
    await post.body?.cancel();
    const seen = await until(
      () => s.view.getChannelMessages().find((m) => m.messageId === "rest-1"),
      "REST message live",
    );
    assert.equal(seen.content, "posted over REST");
    assert.equal(s.view.getMessages().at(-1)?.messageId, "rest-1");
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});
