import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid, until } from "../chat_live/helpers.ts";

Deno.test("examples/echo_agent.ts streams an echo and asks for tool approval on /tool", async () => {
  const server = await startInProcess();
  const thread = tid();
  const child = spawn(Deno.execPath(), [
    "run",
    "-A",
    new URL("../../examples/echo_agent.ts", import.meta.url).pathname,
    "--url",
    `ws://127.0.0.1:${server.port}/socket`,
    "--key",
    "key1",
    "--secret",
    "secret1",
    "--thread",
    thread,
    "--tokens",
    "300",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (c) => (out += c));
  child.stderr!.on("data", (c) => (out += c));
  const exited = new Promise((r) => child.on("exit", r));
  const human = client(server);
  try {
    await until(() => out.includes("listening"), "agent ready", 20_000);
    const s = await human.connect(thread, { clientId: "alice" });
    const plain = await s.view.send("hello echo");
    await until(() => s.view.run(plain.runId)?.status === "complete", "plain answer");
    const answer = s.view.getMessages()[1].content as string;
    assert.ok(answer.startsWith("You said: hello echo. You said:"), answer.slice(0, 40));
    assert.equal(answer.trim().split(" ").length, 300);

    const tool = await s.view.send("please /tool this");
    const suspended = await until(() => {
      const r = s.view.run(tool.runId);
      return r?.status === "suspended" ? r : undefined;
    }, "suspended");
    assert.equal(suspended.suspendedTool?.toolName, "echo_tool");
    await s.view.approveTool(tool.runId, suspended.suspendedTool!.toolCallId);
    await until(() => s.view.run(tool.runId)?.status === "complete", "tool answer");
  } finally {
    human.disconnect();
    child.kill("SIGTERM");
    await exited;
    child.stdout?.destroy();
    child.stderr?.destroy();
    await server.stop();
  }
});
