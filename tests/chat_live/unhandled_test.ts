// The chat SDK never leaves an unhandled rejection of its own: held tokens of a session that
// closes, and async event handlers that fail, are settled or reported, not thrown at the runtime.
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, reasonOf, tid, until } from "./helpers.ts";
import { Emitter } from "../../sdk/client/chat_types.ts";
import { unhandledDuring } from "../helpers/unhandled.ts";

Deno.test("tokens held when the agent's session closes reject their awaiting caller with closed and leave no unhandled rejection", async () => {
  const server = await startInProcess();
  const human = client(server);
  const bot = client(server);
  try {
    const thread = tid();
    const agent = await bot.connectAgent(thread, { secret: "secret1", agentId: "s" });
    const u = await human.connect(thread, { clientId: "alice" });
    let runId = "";
    agent.on("run:pending", (run) => void (runId = run.runId));
    await u.view.send("hi");
    await until(() => runId, "run:pending");
    await agent.startRun(runId);
    const unhandled = await unhandledDuring(async () => {
      agent.token(runId, "nobody awaits this "); // fire and forget
      const awaited = agent.token(runId, "but this one");
      agent.close(); // the two tokens are still held: they are flushed on a closed session
      assert.equal(await reasonOf(awaited), "closed");
    });
    assert.deepEqual(unhandled, []);
  } finally {
    for (const c of [human, bot]) c.disconnect();
    await server.stop();
  }
});

Deno.test("a failing async event handler is logged, not an unhandled rejection, and the other handlers still run", async () => {
  const logged: unknown[][] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => void logged.push(args);
  try {
    const emitter = new Emitter();
    const boom = new Error("boom");
    let reached = false;
    emitter.on("update", async () => {
      await Promise.resolve();
      throw boom;
    });
    emitter.on("update", () => void (reached = true));
    const unhandled = await unhandledDuring(async () => {
      emitter.emit("update", {});
      await until(() => logged.length > 0, "the failure logged");
    });
    assert.deepEqual(unhandled, []);
    assert.equal(reached, true);
    assert.equal(logged[0][1], boom);
  } finally {
    console.error = error;
  }
});
