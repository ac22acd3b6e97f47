import assert from "node:assert/strict";
import type { ChatSession } from "../../sdk/client/chat_client.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "./helpers.ts";

function state(s: ChatSession) {
  const v = s.view;
  return {
    logId: v.logId,
    messages: v.getChannelMessages(),
    branch: v.getMessages().map((m) => m.messageId),
    runs: v.runs(),
    streams: v.runs().map((r) => v.getStream(r.runId)),
  };
}

Deno.test("a viewer that drops mid-stream rejoins with after_log_id and ends in exactly the same state", async () => {
  const server = await startInProcess();
  const steady = client(server);
  const flaky = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "s" });
    const a = await steady.connect(thread, { clientId: "alice" });
    const b = await flaky.connect(thread, { clientId: "bob" });
    const rejoins: unknown[] = [];
    b.on("joined", (p) => rejoins.push(p));
    let runId = "";
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let answered: Promise<void> | undefined;
    agent.on("run:pending", (run) => {
      // Only the first run is answered: the second message queues a run of its own, which
      // must neither take over `runId` nor still stream when the clients disconnect.
      if (runId) return;
      runId = run.runId;
      answered = (async () => {
        await agent.startRun(run.runId);
        for (let i = 0; i < 40; i++) await agent.token(run.runId, `a${i} `);
        await gate;
        for (let i = 0; i < 40; i++) await agent.token(run.runId, `b${i} `);
        await agent.end(run.runId);
      })();
    });
    await a.view.send("tell me a story");
    await until(() => runId && b.view.getStream(runId).includes("a39"), "first half streamed");
    (flaky.socket as any).conn.close(); // abrupt drop; phoenix reconnects
    await until(() => !(flaky.socket as any).isConnected(), "dropped");
    // While bob is away: more log entries (a second message) and more tokens.
    await a.view.send("and then?", { parentId: a.view.getMessages()[0].messageId });
    release();
    await until(() => rejoins.length === 1, "rejoined");
    await until(() => a.view.run(runId)?.status === "complete", "complete for alice");
    await until(
      () => b.view.logId === a.view.logId && b.view.run(runId)?.status === "complete",
      "bob caught up",
    );
    await answered;
    assert.deepEqual(state(b), state(a));
    const answer = a.view.getChannelMessages().find((m) =>
      m.runId === runId && m.role === "assistant"
    )!;
    assert.ok(String(answer.content).endsWith("b39 "));
  } finally {
    for (const c of [steady, flaky, bot]) c.disconnect();
    await server.stop();
  }
});

Deno.test("two tabs of one user stay in sync; a viewer joining mid-run gets the text so far then the rest", async () => {
  const server = await startInProcess();
  const tab1 = client(server);
  const tab2 = client(server);
  const late = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "s" });
    const t1 = await tab1.connect(thread, { clientId: "alice" });
    const t2 = await tab2.connect(thread, { clientId: "alice" });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runId = "";
    let answered: Promise<void> | undefined;
    agent.on("run:pending", (run) => {
      if (runId) return; // only the first run is answered
      runId = run.runId;
      answered = (async () => {
        await agent.startRun(run.runId);
        await agent.token(run.runId, "first part, ");
        await gate;
        await agent.token(run.runId, "second part.");
        await agent.end(run.runId);
      })();
    });
    const r = await t1.view.send("hi from tab 1");
    await until(() => t2.view.getStream(r.runId) === "first part, ", "tab 2 sees the stream");
    const l = await late.connect(thread, { clientId: "carol" });
    assert.equal(l.view.getStream(r.runId), "first part, ");
    release();
    await until(
      () =>
        t2.view.run(r.runId)?.status === "complete" && l.view.run(r.runId)?.status === "complete",
      "done",
    );
    await until(
      () => t1.view.logId === t2.view.logId && t1.view.logId === l.view.logId,
      "same log position",
    );
    await answered;
    assert.deepEqual(state(t2), state(t1));
    assert.deepEqual(state(l), state(t1));
    assert.equal(t2.view.getMessages()[1].content, "first part, second part.");
    // Tab 2 can cancel a run started in tab 1 (same client id: cancel_own).
    const r2 = await t1.view.send("again");
    await t2.cancel(r2.runId);
    await until(
      () => t1.view.run(r2.runId)?.status === "cancelled",
      "cancelled from the other tab",
    );
    assert.equal(runId, r.runId);
  } finally {
    for (const c of [tab1, tab2, late, bot]) c.disconnect();
    await server.stop();
  }
});
