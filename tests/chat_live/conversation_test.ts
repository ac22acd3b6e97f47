import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "./helpers.ts";

Deno.test("ChatClient conversation: send, agent streams tokens, run ends complete with the full text", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "echo" });
    const session = await human.connect(thread, { clientId: "alice" });
    const events: string[] = [];
    for (const e of ["run:start", "run:end"]) session.on(e, () => events.push(e));
    let sawPartial = false;
    session.on("update", () => {
      for (const r of session.view.runs()) {
        if (session.view.getStream(r.runId).length > 0) sawPartial = true;
      }
    });

    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      for (let i = 0; i < 30; i++) agent.token(run.runId, `w${i} `);
      await new Promise((r) => setTimeout(r, 60));
      await agent.end(run.runId, "complete");
    });

    const active = await session.view.send("hello");
    assert.equal(active.status, "pending");
    assert.deepEqual(active.toJSON(), { threadId: thread, runId: active.runId });
    await until(() => session.view.run(active.runId)?.status === "complete", "run complete");
    const expected = Array.from({ length: 30 }, (_, i) => `w${i} `).join("");
    const msgs = session.view.getMessages();
    assert.equal(msgs.length, 2);
    assert.equal(msgs[0].content, "hello");
    assert.equal(msgs[0].role, "user");
    assert.equal(msgs[1].role, "assistant");
    assert.equal(msgs[1].content, expected);
    assert.equal(msgs[1].status, "complete");
    assert.equal(msgs[1].parentId, msgs[0].messageId);
    assert.equal(session.view.getStream(active.runId), "");
    assert.ok(sawPartial, "saw streamed text before the end");
    assert.deepEqual(events, ["run:start", "run:end"]);
    assert.equal(active.status, "complete");
    // The agent's view converged too.
    await until(() => agent.view.logId === session.view.logId, "agent caught up");
    assert.deepEqual(agent.view.getMessages(), session.view.getMessages());
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});
