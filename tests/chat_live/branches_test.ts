import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "./helpers.ts";

Deno.test("edit forks a user message, regenerate adds an assistant sibling, selectSibling switches, and branches survive a reconnect", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "b" });
    const s = await human.connect(thread, { clientId: "alice" });
    let n = 0;
    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      await agent.token(run.runId, `answer ${++n}`);
      await agent.end(run.runId);
    });
    const done = (runId: string) =>
      until(() => s.view.run(runId)?.status === "complete", `run ${runId}`);
    const first = await s.view.send("question v1");
    await done(first.runId);
    const [q1, a1] = s.view.getMessages();

    // edit -> fork of q1 with the same parent and a new run.
    const edited = await s.view.edit(q1.messageId, "question v2");
    assert.equal(edited.forkOf, q1.messageId);
    await done(edited.runId);
    const branch2 = s.view.getMessages();
    assert.deepEqual(branch2.map((m) => m.content), ["question v2", "answer 2"]);
    assert.equal(branch2[0].forkOf, q1.messageId);
    assert.equal(branch2[0].parentId, null);
    assert.equal(s.view.getChannelMessages().length, 4);

    // regenerate -> an assistant sibling of the v2 answer.
    const regen = await s.view.regenerate(branch2[1].messageId);
    assert.equal(regen.regeneratesMessageId, branch2[1].messageId);
    await done(regen.runId);
    const branch3 = s.view.getMessages();
    assert.deepEqual(branch3.map((m) => m.content), ["question v2", "answer 3"]);
    assert.equal(branch3[1].msgRegenerate, branch2[1].messageId);
    assert.equal(branch3[1].messageId, regen.messageId);
    assert.equal(s.view.run(regen.runId)?.msgRegenerate, branch2[1].messageId);

    // Switch back to the original question, then to the first answer of v2.
    s.view.selectSibling(null, q1.messageId);
    assert.deepEqual(s.view.getMessages().map((m) => m.messageId), [q1.messageId, a1.messageId]);
    s.view.selectSibling(null, branch2[0].messageId);
    s.view.selectSibling(branch2[0].messageId, branch2[1].messageId);
    assert.deepEqual(s.view.getMessages().map((m) => m.content), ["question v2", "answer 2"]);

    // A new send follows the selected branch.
    const follow = await s.view.send("follow-up");
    await done(follow.runId);
    assert.deepEqual(s.view.getMessages().map((m) => m.content), [
      "question v2",
      "answer 2",
      "follow-up",
      "answer 4",
    ]);

    // Reconnect: selection and all branches are still there.
    const joined = new Promise((r) => s.on("joined", r));
    (human.socket as any).conn.close();
    await joined;
    assert.deepEqual(s.view.getMessages().map((m) => m.content), [
      "question v2",
      "answer 2",
      "follow-up",
      "answer 4",
    ]);
    assert.equal(s.view.getChannelMessages().length, 7);
    s.view.selectSibling(branch2[0].messageId, branch3[1].messageId);
    assert.deepEqual(s.view.getMessages().map((m) => m.content), ["question v2", "answer 3"]);
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});
