// SwitchboardChatTransport with the AI SDK's own chat state machine (AbstractChat) on the user
// side and streamText over the SDK's mock model on the agent side (pipeUIMessageStream),
// against a real server: send, stream, abort, reload-resume, two tabs, regenerate, tool
// approval, model error.
import assert from "node:assert/strict";
import { lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { SwitchboardChatTransport } from "../../sdk/ai/mod.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { SLOW_WORDS, startAgent, TestChat, textOfMessage, until } from "./helpers.ts";

Deno.test("AI SDK transport: useChat's state machine over Switchboard runs", async (t) => {
  const server = await startInProcess({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const endpoint = `ws://127.0.0.1:${server.port}/socket`;
  const transports: SwitchboardChatTransport[] = [];
  const closers: (() => void)[] = [];
  const transport = (clientId = "alice") => {
    const tr = new SwitchboardChatTransport({ endpoint, appKey: "key1", clientId });
    transports.push(tr);
    return tr;
  };
  const thread = async (id: string) => {
    const agent = await startAgent(server, id);
    closers.push(agent.close);
    return agent;
  };
  try {
    await t.step(
      "send streams the run into the chat; the thread stores the same message",
      async () => {
        const agent = await thread("t-hello");
        const tr = transport();
        const chat = new TestChat({ id: "t-hello", transport: tr });
        await chat.sendMessage({ text: "hello" });
        assert.equal(chat.status, "ready");
        assert.deepEqual(chat.messages.map((m) => m.role), ["user", "assistant"]);
        assert.equal(textOfMessage(chat.messages[1]), "Hello world");
        await until(() => agent.log.outcomes.length === 1);
        assert.deepEqual(agent.log.outcomes, ["complete"]);
        const stored = await transport("bob").messages("t-hello");
        assert.deepEqual(
          stored.map((m) => [m.id, m.role, textOfMessage(m)]),
          chat.messages.map((m) => [m.id, m.role, textOfMessage(m)]),
        );
      },
    );

    await t.step(
      "a second tab and a reloaded page get the active run from its first chunk",
      async () => {
        await thread("t-slow");
        const chat = new TestChat({ id: "t-slow", transport: transport() });
        const sending = chat.sendMessage({ text: "slow please" });
        await until(() => textOfMessage(chat.messages[1]).length > 0, 8000, "first tokens");
        // A reload: a new transport, the stored messages, then resumeStream.
        const reloaded = transport();
        const tab = new TestChat({
          id: "t-slow",
          transport: reloaded,
          messages: await reloaded.messages("t-slow"),
        });
        await tab.resumeStream();
        await sending;
        const full = SLOW_WORDS.join("");
        assert.equal(textOfMessage(chat.messages.at(-1)), full);
        assert.equal(textOfMessage(tab.messages.at(-1)), full);
        assert.equal(
          tab.messages.filter((m) => m.role === "assistant").length,
          1,
          "the resumed stream replaced, not duplicated, the message",
        );
        assert.equal(
          await transport().reconnectToStream({ chatId: "t-slow" }),
          null,
          "no active run any more",
        );
      },
    );

    await t.step("stop() cancels the run and aborts the model call", async () => {
      const agent = await thread("t-stop");
      const chat = new TestChat({ id: "t-stop", transport: transport() });
      const sending = chat.sendMessage({ text: "slow again" });
      await until(() => textOfMessage(chat.messages[1]).length > 0, 8000, "first tokens");
      await chat.stop();
      await sending;
      await until(() => agent.log.outcomes.length === 1, 8000, "agent outcome");
      assert.deepEqual(agent.log.outcomes, ["cancelled"]);
      assert.equal(agent.log.aborted, 1, "streamText was aborted");
      const view = (await transport("carol").session("t-stop")).view;
      assert.equal(view.runs()[0].status, "cancelled");
      assert.ok(textOfMessage(chat.messages[1]).length < SLOW_WORDS.join("").length);
    });

    await t.step("regenerate answers again as a new assistant message", async () => {
      await thread("t-regen");
      const tr = transport();
      const chat = new TestChat({ id: "t-regen", transport: tr });
      await chat.sendMessage({ text: "hello" });
      const first = chat.messages[1].id;
      await chat.regenerate();
      assert.equal(chat.status, "ready");
      assert.equal(chat.messages.length, 2);
      assert.notEqual(chat.messages[1].id, first);
      assert.equal(textOfMessage(chat.messages[1]), "Hello world");
      const view = (await tr.session("t-regen")).view;
      assert.deepEqual(view.siblings(chat.messages[0].id), [first, chat.messages[1].id]);
    });

    await t.step(
      "tool approval suspends the run; the human's answer continues it; parts survive",
      async () => {
        await thread("t-tool");
        const tr = transport();
        const chat = new TestChat({
          id: "t-tool",
          transport: tr,
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
        });
        await chat.sendMessage({ text: "tool weather" });
        const asking = chat.messages[1].parts.find((p) => p.type === "tool-weather") as {
          state: string;
          toolCallId: string;
          approval: { id: string };
          input: unknown;
        };
        assert.equal(asking.state, "approval-requested");
        assert.deepEqual(asking.input, { city: "Oslo" });
        await chat.addToolApprovalResponse({ id: asking.approval.id, approved: true });
        await until(
          () => chat.status === "ready" && textOfMessage(chat.messages[1]).includes("Sunny"),
          8000,
          "continuation",
        );
        assert.equal(textOfMessage(chat.messages[1]), "Let me check. Sunny in Oslo.");
        const tool = chat.messages[1].parts.find((p) => p.type === "tool-weather") as {
          state: string;
          output: unknown;
        };
        assert.equal(tool.state, "output-available");
        assert.deepEqual(tool.output, { city: "Oslo", celsius: 21 });
        // The stored message keeps reasoning, tool and text parts.
        const stored = (await transport("dave").messages("t-tool"))[1];
        assert.deepEqual(stored.parts.map((p) => p.type), [
          "reasoning",
          "text",
          "tool-weather",
          "text",
        ]);
      },
    );

    await t.step("a model error ends the run with error and the chat shows it", async () => {
      const agent = await thread("t-fail");
      const chat = new TestChat({ id: "t-fail", transport: transport() });
      await chat.sendMessage({ text: "fail now" });
      assert.equal(chat.status, "error");
      assert.match(String(chat.error?.message), /model exploded/);
      await until(() => agent.log.outcomes.length === 1);
      assert.deepEqual(agent.log.outcomes, ["error"]);
    });
  } finally {
    for (const tr of transports) tr.close();
    for (const close of closers) close();
    await server.stop();
  }
});
