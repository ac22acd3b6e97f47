// The text an agent has streamed so far is kept per (thread topic, run id). It was keyed
// `topic\nrunId`, so thread `x\ny` run `z` and thread `x` run `y\nz` shared one entry: a viewer
// joining thread `x` saw the other thread's streamed text as its own pending run's. keyOf keeps
// them apart (against the server, or the binary with SWITCHBOARD_BIN).
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, until } from "../chat_live/helpers.ts";

Deno.test("streamed text stays with its thread and run when ids hold newlines", async () => {
  const server = await startInProcess();
  const bot = client(server);
  const alice = client(server);
  const bob = client(server);
  const late = client(server);
  try {
    const one = `x-${crypto.randomUUID().slice(0, 8)}`;
    const tricky = `${one}\ny`; // thread `x\ny`, run `z` ...
    const agent = await bot.connectAgent(tricky, { secret: "secret1", agentId: "s" });
    let streamed = false;
    agent.on("run:pending", async (run) => {
      await agent.startRun(run.runId);
      await agent.token(run.runId, "only in the thread with the newline");
      streamed = true;
    });
    const a = await alice.connect(tricky, { clientId: "alice" });
    await a.view.send("hi", { runId: "z" });
    await until(() => streamed && a.view.getStream("z") !== "", "the agent streamed", 20_000);
    // ... and thread `x`, run `y\nz`: pending (no agent), nothing streamed.
    const b = await bob.connect(one, { clientId: "bob" });
    await b.view.send("hello", { runId: "y\nz" });
    await until(() => b.view.run("y\nz")?.status === "pending", "the run is pending", 20_000);
    const l = await late.connect(one, { clientId: "carol" });
    assert.equal(l.view.run("y\nz")?.status, "pending");
    assert.equal(l.view.getStream("y\nz"), "");
    // The streamed text is still there for its own thread's viewers.
    const again = await late.connect(tricky, { clientId: "carol" });
    assert.equal(again.view.getStream("z"), "only in the thread with the newline");
  } finally {
    for (const c of [bot, alice, bob, late]) c.disconnect();
    await server.stop();
  }
});

Deno.test("a run whose id starts above U+FFFF is one of its thread's runs (a joiner's snapshot shows it)", async () => {
  const server = await startInProcess();
  const alice = client(server);
  const late = client(server);
  try {
    const thread = `t-${crypto.randomUUID().slice(0, 8)}`;
    const a = await alice.connect(thread, { clientId: "alice" });
    await a.view.send("hi", { runId: "😀 run" });
    await until(() => a.view.run("😀 run")?.status === "pending", "the run is pending", 20_000);
    // The thread's runs were read up to "\uffff": this one was missing from a joiner's snapshot.
    const l = await late.connect(thread, { clientId: "carol" });
    assert.equal(l.view.run("😀 run")?.status, "pending");
  } finally {
    for (const c of [alice, late]) c.disconnect();
    await server.stop();
  }
});
