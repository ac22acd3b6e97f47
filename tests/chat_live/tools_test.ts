import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, reasonOf, tid, until } from "./helpers.ts";

Deno.test("suspend / approve / resume and suspend / reject / end: events, states and invalid_state", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "tools" });
    const session = await human.connect(thread, { clientId: "alice" });
    const seen: [string, unknown][] = [];
    for (const e of ["run:suspend", "run:suspended", "run:resume"]) {
      session.on(e, (p) => seen.push([e, p]));
    }
    const decisions: [string, any][] = [];
    agent.on("tool:approved", (p) => decisions.push(["approved", p]));
    agent.on("tool:rejected", (p) => decisions.push(["rejected", p]));
    const pending: string[] = [];
    agent.on("run:pending", (run) => pending.push(run.runId));

    // Approve path.
    const r1 = await session.view.send("please /tool");
    await until(() => pending.includes(r1.runId), "pending announced");
    assert.equal(await reasonOf(agent.resume(r1.runId)), "invalid_state"); // still pending
    assert.equal(await reasonOf(agent.suspend(r1.runId, { toolName: "x" })), "invalid_state");
    await agent.startRun(r1.runId);
    assert.equal(await reasonOf(agent.resume(r1.runId)), "invalid_state"); // active, not suspended
    const callId = await agent.suspend(r1.runId, {
      toolName: "search",
      args: { q: "deno" },
      toolCallId: "call-1",
    });
    assert.equal(callId, "call-1");
    await until(() => session.view.run(r1.runId)?.status === "suspended", "suspended");
    assert.deepEqual(session.view.run(r1.runId)?.suspendedTool, {
      toolCallId: "call-1",
      toolName: "search",
      args: { q: "deno" },
    });
    assert.equal(await reasonOf(agent.suspend(r1.runId, { toolName: "again" })), "invalid_state");
    assert.equal(await reasonOf(session.view.approveTool(r1.runId, "wrong-call")), "invalid_state");
    assert.equal(await reasonOf(session.view.approveTool("nope", "call-1")), "not_found");
    await session.view.approveTool(r1.runId, "call-1");
    await until(() => decisions.length === 1, "agent got the approval");
    assert.equal(decisions[0][0], "approved");
    assert.deepEqual(decisions[0][1], { runId: r1.runId, toolCallId: "call-1", clientId: "alice" });
    assert.equal(await reasonOf(session.view.rejectTool(r1.runId, "call-1")), "invalid_state"); // decided
    await agent.resume(r1.runId);
    await until(() => session.view.run(r1.runId)?.status === "active", "resumed");
    await agent.token(r1.runId, "found it");
    await agent.end(r1.runId, "complete");
    await until(() => session.view.run(r1.runId)?.status === "complete", "complete");
    const tool = { runId: r1.runId, toolCallId: "call-1", toolName: "search", args: { q: "deno" } };
    assert.deepEqual(seen, [["run:suspend", tool], ["run:suspended", tool], ["run:resume", {
      runId: r1.runId,
    }]]);

    // Reject path: the agent ends the run with an error.
    const r2 = await session.view.send("/tool again");
    await until(() => pending.includes(r2.runId), "second pending");
    await agent.startRun(r2.runId);
    await agent.suspend(r2.runId, { toolName: "delete_everything", toolCallId: "call-2" });
    await until(() => session.view.run(r2.runId)?.status === "suspended", "suspended 2");
    await session.view.rejectTool(r2.runId, "call-2", "no way");
    await until(() => decisions.length === 2, "agent got the rejection");
    assert.deepEqual(decisions[1], ["rejected", {
      runId: r2.runId,
      toolCallId: "call-2",
      clientId: "alice",
      reason: "no way",
    }]);
    await agent.end(r2.runId, "error", "tool rejected");
    await until(() => session.view.run(r2.runId)?.status === "error", "error");
    const last = session.view.getMessages().at(-1)!;
    assert.equal(last.status, "error");
    assert.equal(last.content, "tool rejected");
    assert.equal(await reasonOf(agent.resume(r2.runId)), "already_ended");
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});

Deno.test("runs queue: a second send stays pending until the active run ends", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "q" });
    const session = await human.connect(thread, { clientId: "alice" });
    const announced: string[] = [];
    agent.on("run:pending", (run) => announced.push(run.runId));
    const a = await session.view.send("one");
    await until(() => announced.length === 1, "first announced");
    await agent.startRun(a.runId);
    const b = await session.view.send("two");
    await until(() => session.view.run(b.runId), "second run known");
    assert.equal(announced.length, 1);
    assert.equal(await reasonOf(agent.startRun(b.runId)), "invalid_state");
    await agent.end(a.runId);
    await until(() => announced.length === 2, "second announced after the first ended");
    assert.equal(announced[1], b.runId);
    await agent.startRun(b.runId);
    await agent.end(b.runId);
    await until(() => session.view.run(b.runId)?.status === "complete", "second complete");
    // The queued message chains after the first answer.
    assert.deepEqual(session.view.getMessages().map((m) => [m.role, m.content]), [
      ["user", "one"],
      ["assistant", ""],
      ["user", "two"],
      ["assistant", ""],
    ]);
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});
