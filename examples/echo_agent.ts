/**
 * Echo agent: joins a chat thread with the app secret and answers every user message by
 * streaming a long echo at about 1,500 tokens per second. A message containing "/tool" first
 * asks a human to approve an `echo_tool` call (approve -> the tool "runs"; reject -> the run
 * ends with an error). Cancellation stops the stream at once.
 *
 *   npx deno run -A examples/echo_agent.ts --url ws://localhost:4000/socket \
 *     --key APP_KEY --secret APP_SECRET --thread THREAD_ID [--tokens 3000] [--rate 1500]
 *
 * Flags may also come from SWITCHBOARD_SOCKET, APP_KEY, APP_SECRET, THREAD_ID.
 */
import { ChatClient } from "../sdk/client/chat_client.ts";
import type { RunInfo } from "../sdk/client/chat_types.ts";

/** A flag's value (or its environment variable's); a missing one stops with one line. */
function flag(name: string, env: string, fallback?: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 ? Deno.args[i + 1] : Deno.env.get(env) ?? fallback;
  if (v === undefined || v === "") {
    console.error(
      `echo_agent: missing --${name} (or ${env}); usage: --key APP_KEY --secret APP_SECRET --thread THREAD_ID [--url ws://HOST:PORT/socket]`,
    );
    Deno.exit(2);
  }
  return v;
}

const endpoint = flag("url", "SWITCHBOARD_SOCKET", "ws://localhost:4000/socket");
const appKey = flag("key", "APP_KEY");
const secret = flag("secret", "APP_SECRET");
const threadId = flag("thread", "THREAD_ID");
const totalTokens = Number(flag("tokens", "ECHO_TOKENS", "3000"));
const rate = Number(flag("rate", "ECHO_RATE", "1500"));

const client = new ChatClient(appKey, { endpoint });
const agent = await client.connectAgent(threadId, { secret, agentId: "echo-agent" });
const cancelled = new Set<string>();
const decisions = new Map<string, (approved: boolean) => void>();

agent.on("run:cancel", ({ runId }) => cancelled.add(runId));
agent.on("tool:approved", ({ toolCallId }) => decisions.get(toolCallId)?.(true));
agent.on("tool:rejected", ({ toolCallId }) => decisions.get(toolCallId)?.(false));
agent.on("run:pending", (run: RunInfo) => void answer(run).catch((e) => console.error(e)));

/** Streams `totalTokens` tokens at `rate` per second, 10 ms worth per tick. */
async function stream(runId: string, words: string[]): Promise<boolean> {
  const perTick = Math.max(1, Math.round(rate / 100));
  for (let i = 0; i < totalTokens; i += perTick) {
    if (cancelled.has(runId)) return false;
    for (let j = i; j < Math.min(i + perTick, totalTokens); j++) {
      agent.token(runId, words[j % words.length] + " ").catch(() => cancelled.add(runId));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return !cancelled.has(runId);
}

async function answer(run: RunInfo): Promise<void> {
  const question = agent.view.getChannelMessages().find((m) => m.messageId === run.parentId);
  const text = typeof question?.content === "string"
    ? question.content
    : JSON.stringify(question?.content ?? "");
  await agent.startRun(run.runId);
  if (text.includes("/tool")) {
    const toolCallId = crypto.randomUUID();
    const decided = new Promise<boolean>((resolve) => decisions.set(toolCallId, resolve));
    await agent.suspend(run.runId, { toolCallId, toolName: "echo_tool", args: { text } });
    const approved = await decided;
    decisions.delete(toolCallId);
    if (cancelled.has(run.runId)) return;
    if (!approved) return await agent.end(run.runId, "error", "The echo tool was rejected.");
    await agent.resume(run.runId);
  }
  const words = `You said: ${text}.`.split(/\s+/);
  if (await stream(run.runId, words)) await agent.end(run.runId, "complete");
}

console.log(`echo agent listening on chat:${appKey}:${threadId}`);
