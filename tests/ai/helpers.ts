// Helpers of the AI SDK tests: a Chat (the AI SDK's own chat state machine, AbstractChat,
// with a plain state as its React/Vue/Svelte wrappers have) and an agent that answers every
// run with `streamText` over the SDK's mock model, forwarded by pipeUIMessageStream.
import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  convertToModelMessages,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
} from "ai";
import { MockLanguageModelV4, simulateReadableStream } from "ai/test";
import { z } from "zod";
import { ChatClient } from "../../sdk/client/mod.ts";
import { contentText, type PipeOutcome, pipeUIMessageStream } from "../../sdk/ai/mod.ts";
import type { TestServer } from "../helpers/server.ts";

/** A plain ChatState. */
class State implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined;
  messages: UIMessage[];
  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }
  pushMessage = (m: UIMessage) => void (this.messages = [...this.messages, m]);
  popMessage = () => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i: number, m: UIMessage) =>
    void (this.messages = this.messages.map((x, j) => (j === i ? m : x)));
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The AI SDK's chat with a plain state, as a framework binding would make it. */
export class TestChat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    super({ ...init, state: new State(init.messages) });
  }
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const finish = (unified: string) => ({
  type: "finish",
  finishReason: { unified, raw: undefined },
  usage,
});
const textParts = (id: string, words: string[]) => [
  { type: "text-start", id },
  ...words.map((delta) => ({ type: "text-delta", id, delta })),
  { type: "text-end", id },
];

/** The words of the slow answer (40 tokens, 25 ms apart). */
export const SLOW_WORDS = Array.from({ length: 40 }, (_, i) => `w${i} `);

/** A mock model whose answer depends on the prompt: hello, slow, tool, fail. */
function modelFor(prompt: string) {
  let calls = 0;
  return new MockLanguageModelV4({
    doStream: () => {
      calls++;
      const chunks = (): unknown[] => {
        if (prompt.includes("slow")) return [...textParts("t", SLOW_WORDS), finish("stop")];
        if (prompt.includes("fail")) {
          return [...textParts("t", ["partial "]), {
            type: "error",
            error: new Error("model exploded"),
          }];
        }
        if (prompt.includes("tool") && calls === 1) {
          return [
            { type: "reasoning-start", id: "r" },
            { type: "reasoning-delta", id: "r", delta: "need weather" },
            { type: "reasoning-end", id: "r" },
            ...textParts("t", ["Let me ", "check. "]),
            {
              type: "tool-call",
              toolCallId: "call-1",
              toolName: "weather",
              input: JSON.stringify({ city: "Oslo" }),
            },
            finish("tool-calls"),
          ];
        }
        if (prompt.includes("tool")) {
          return [...textParts("t2", ["Sunny ", "in Oslo."]), finish("stop")];
        }
        return [...textParts("t", ["Hello", " world"]), finish("stop")];
      };
      const delay = prompt.includes("slow") ? 25 : 1;
      return Promise.resolve({
        stream: simulateReadableStream({ chunks: chunks() as never[], chunkDelayInMs: delay }),
      });
    },
  });
}

const tools = {
  weather: tool({
    description: "weather of a city",
    inputSchema: z.object({ city: z.string() }),
    needsApproval: true,
    execute: ({ city }) => Promise.resolve({ city, celsius: 21 }),
  }),
};

/** What the test agent saw. */
export interface AgentLog {
  outcomes: PipeOutcome[];
  aborted: number;
}

/**
 * An agent on `threadId` answering each pending run: `streamText` over the mock model with
 * the run's prompt, forwarded by pipeUIMessageStream (tool approvals continue the answer).
 */
export async function startAgent(
  server: TestServer,
  threadId: string,
): Promise<{ log: AgentLog; close(): void }> {
  const app = server.apps[0];
  const client = new ChatClient(app.key, { endpoint: `ws://127.0.0.1:${server.port}/socket` });
  const agent = await client.connectAgent(threadId, { secret: app.secret, agentId: "mock" });
  const log: AgentLog = { outcomes: [], aborted: 0 };
  agent.on("run:pending", (run: { runId: string; parentId: string | null }) => {
    const view = agent.view;
    const parent = view.getChannelMessages().find((m) => m.messageId === run.parentId);
    const prompt = contentText(parent?.content);
    const model = modelFor(prompt);
    const controller = new AbortController();
    agent.on("run:cancel", (p: { runId: string }) => p.runId === run.runId && controller.abort());
    const result = streamText({
      model,
      tools,
      prompt,
      abortSignal: controller.signal,
      onAbort: () => void log.aborted++,
      onError: () => {}, // the error reaches the chat through the run; no console noise
    });
    const ui = (r: typeof result) =>
      r.toUIMessageStream({ onError: (e) => (e instanceof Error ? e.message : String(e)) });
    pipeUIMessageStream(agent, run.runId, ui(result), {
      signal: controller.signal,
      onToolApproval: async ({ message, signal }) => {
        const messages = await convertToModelMessages([{
          id: "u",
          role: "user",
          parts: [{ type: "text", text: prompt }],
        }, message], { tools });
        return ui(
          streamText({ model, tools, messages, abortSignal: signal, stopWhen: stepCountIs(3) }),
        );
      },
    }).then((o) => log.outcomes.push(o));
  });
  return { log, close: () => client.disconnect() };
}

/** Waits until `cond()` holds, or fails after `ms`. */
export async function until(cond: () => boolean, ms = 8000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The text of a UIMessage. */
export function textOfMessage(m: UIMessage | undefined): string {
  return (m?.parts ?? []).map((p) => (p.type === "text" ? p.text : "")).join("");
}
