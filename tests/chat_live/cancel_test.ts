import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, reasonOf, tid, until } from "./helpers.ts";

Deno.test("cancel mid-stream: agent gets run:cancel, run:end cancelled, then the final message, then one 4-slot batch", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  const raw = await RawSocket.connect(server.wsUrl());
  try {
    const thread = tid();
    const topic = `chat:key1:${thread}`;
    assert.equal((await raw.join(topic, { client_id: "watcher" })).status, "ok");
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "streamer" });
    const session = await human.connect(thread, { clientId: "alice" });
    const cancels: unknown[] = [];
    agent.on("run:cancel", (p) => cancels.push(p));
    let stop = false;
    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      for (let i = 0; !stop && i < 2000; i++) {
        agent.token(run.runId, `t${i} `).catch(() => (stop = true));
        await new Promise((r) => setTimeout(r, 2));
      }
    });
    const active = await session.view.send("stream forever");
    await until(() => session.view.getStream(active.runId).length > 20, "some streamed text");
    await active.cancel();
    await until(() => cancels.length === 1, "agent notified");
    stop = true;
    assert.deepEqual(cancels[0], { runId: active.runId, reason: "cancelled", by: "alice" });
    await until(() => session.view.run(active.runId)?.status === "cancelled", "run cancelled");
    const answer = session.view.getMessages()[1];
    assert.equal(answer.status, "cancelled");
    assert.ok(typeof answer.content === "string" && answer.content.startsWith("t0 t1 "));
    assert.equal(session.view.getStream(active.runId), "");

    // Wire order seen by a plain subscriber: stream deltas, run:end, message:updated, batch.
    await raw.waitFor((f) => f[3] === "batch");
    const names = raw.events(topic).map((f) => f[3]).filter((e) => e !== "phx_reply");
    const endAt = names.indexOf("run:end");
    assert.deepEqual(names.slice(endAt), ["run:end", "message:updated", "batch"]);
    assert.ok(names.slice(0, endAt).includes("stream"));
    const end = raw.events(topic, "run:end")[0][4];
    assert.equal(end.reason, "cancelled");
    assert.equal(typeof end.endedAt, "number");
    const batch = raw.events(topic, "batch");
    assert.equal(batch.length, 1);
    const ops = batch[0][4].ops as { op: string; slot: string; value?: any }[];
    assert.equal(batch[0][4].log_id, (end.log_id as number) + 2);
    assert.deepEqual(ops.map((o) => [o.op, o.slot]), [
      ["set", `message:${answer.messageId}`],
      ["set", `run:${active.runId}`],
      ["delete", `stream:${active.runId}`],
      ["set", "head"],
    ]);
    assert.equal(ops[0].value.status, "cancelled");
    assert.equal(ops[0].value.content, answer.content);
    assert.equal(ops[1].value.status, "cancelled");
    // The streamed deltas add up to the final text.
    const streamed = raw.events(topic, "stream").map((f) => f[4].text).join("");
    assert.equal(streamed, answer.content);

    // Late agent pushes and a second cancel are refused.
    assert.equal(await reasonOf(agent.token(active.runId, "late")), "already_ended");
    assert.equal(await reasonOf(agent.end(active.runId)), "already_ended");
    assert.equal(await reasonOf(active.cancel()), "already_ended");
  } finally {
    await raw.close();
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});

Deno.test("a client disconnecting does not cancel its run", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "a" });
    const session = await human.connect(thread, { clientId: "bob" });
    const cancels: unknown[] = [];
    agent.on("run:cancel", (p) => cancels.push(p));
    const started = new Promise<string>((resolve) => {
      agent.on("run:pending", async (run) => {
        await agent.startRun(run.runId);
        resolve(run.runId);
      });
    });
    await session.view.send("hi");
    const runId = await started;
    session.close();
    human.disconnect();
    await agent.token(runId, "still here");
    await agent.end(runId, "complete");
    await until(() => agent.view.run(runId)?.status === "complete", "completed");
    assert.equal(cancels.length, 0);
    assert.equal(agent.view.getMessages()[1].content, "still here");
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});

Deno.test("agent: runs queued while one is being started are announced one at a time, never while another is active", async () => {
  const server = await startInProcess({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "a" });
    const session = await human.connect(thread, { clientId: "bob" });
    const refused: string[] = [];
    const done: string[] = [];
    agent.on("run:pending", async (run) => {
      try {
        // A slow start: the next sends arrive while this run is still pending on the server.
        await new Promise((r) => setTimeout(r, 30));
        await agent.startRun(run.runId);
        await agent.token(run.runId, "ok");
        await agent.end(run.runId, "complete");
        done.push(run.runId);
      } catch (err) {
        refused.push(String((err as { reason?: string }).reason ?? err));
      }
    });
    for (const text of ["one", "two", "three"]) await session.view.send(text);
    await until(() => done.length === 3, "three runs answered");
    assert.deepEqual(refused, []);
  } finally {
    human.disconnect();
    bot.disconnect();
    await server.stop();
  }
});
