import assert from "node:assert/strict";
import { Switchboard } from "../../sdk/server/mod.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, reasonOf, tid, until } from "./helpers.ts";

// The join's authorization errors are checked in-process in tests/harness/chat_test.ts.

Deno.test("thread push errors: forbidden: missing {verb}, not_found, forbidden, already_ended, invalid_state, archive_unavailable", async () => {
  const server = await startInProcess();
  const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key2", appSecret: "secret2" });
  const thread = tid();
  const tokenFor = (verbs?: string[]) => (p: { socket_id: string; client_id: string }) =>
    sb.authenticateChat(p.socket_id, thread, p.client_id, verbs);
  const alice = client(server, { appKey: "key2", authCallback: tokenFor() });
  const mallory = client(server, { appKey: "key2", authCallback: tokenFor() });
  const observer = client(server, { appKey: "key2", authCallback: tokenFor(["subscribe"]) });
  const boss = client(server, {
    appKey: "key2",
    authCallback: (p, done) => {
      sb.mintFastToken(p.socket_id, [
        `chat:subscribe:${thread}`,
        `chat:publish:cancel_any:${thread}`,
      ], p.client_id)
        .then((t) => done(null, t), done);
    },
  });
  const bot = client(server, { appKey: "key2" });
  try {
    const a = await alice.connect(thread, { clientId: "alice" });
    const m = await mallory.connect(thread, { clientId: "mallory" });
    const o = await observer.connect(thread, { clientId: "olga" });
    const b = await boss.connect(thread, { clientId: "boss" });
    const agent = await bot.connectAgent(thread, { secret: "secret2", agentId: "bot" });

    assert.equal(await reasonOf(o.view.send("hi")), "forbidden: missing publish:user_message");
    assert.equal(await reasonOf(o.view.approveTool("r", "c")), "forbidden: missing tool_approval");
    assert.equal(await reasonOf(o.cancel("r")), "forbidden: missing cancel_own");
    assert.equal(
      await reasonOf(a.push("run:start", { runId: "r" })),
      "forbidden: missing publish:run_lifecycle",
    );
    assert.equal(
      await reasonOf(a.push("token", { runId: "r", text: "x" })),
      "forbidden: missing publish:token",
    );
    assert.equal(
      await reasonOf(agent.push("send", { content: "x" })),
      "forbidden: missing publish:user_message",
    );

    assert.equal(await reasonOf(a.cancel("no-such-run")), "not_found");
    assert.equal(await reasonOf(agent.startRun("no-such-run")), "not_found");
    assert.equal(await reasonOf(a.view.edit("no-such-message", "x")), "not_found");
    assert.equal(await reasonOf(a.view.regenerate("no-such-message")), "not_found");

    const run = await a.view.send("hello");
    assert.equal(await reasonOf(m.cancel(run.runId)), "forbidden");
    assert.equal(
      await reasonOf(agent.end(run.runId, "complete").then(() => agent.end(run.runId))),
      "already_ended",
    );
    assert.equal(await reasonOf(run.cancel()), "already_ended");
    assert.equal(
      await reasonOf(agent.push("run:end", { runId: run.runId, reason: "bogus" })),
      "invalid_request: reason must be complete or error",
    );

    const second = await a.view.send("again");
    assert.equal(await reasonOf(agent.resume(second.runId)), "invalid_state");
    await b.cancel(second.runId); // publish:cancel_any may cancel someone else's run
    await until(() => a.view.run(second.runId)?.status === "cancelled", "cancelled by boss");

    assert.equal(
      await reasonOf(a.push("load_older", { before: "no-such-message" })),
      "archive_unavailable",
    );
  } finally {
    for (const c of [alice, mallory, observer, boss, bot]) c.disconnect();
    await server.stop();
  }
});
