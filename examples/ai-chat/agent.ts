/**
 * The example's agent, in 20 lines of logic: joins a thread with the app secret and answers
 * every run with `streamText`, forwarded into the run by `pipeUIMessageStream`. The weather
 * tool needs a human's approval; a human cancel aborts the model call.
 */
import {
  convertToModelMessages,
  type LanguageModel,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
} from "ai";
import { z } from "zod";
import { ChatClient } from "../../sdk/client/mod.ts";
import { cancelSignal, pipeUIMessageStream, toUIMessage } from "../../sdk/ai/mod.ts";

const tools = {
  weather: tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    needsApproval: true,
    execute: ({ city }) => Promise.resolve({ city, celsius: 21, sky: "sunny" }),
  }),
};

/** Answers every run of `threadId` (until the returned function is called). */
export async function runAgent(
  opts: {
    endpoint: string;
    appKey: string;
    secret: string;
    threadId: string;
    model: LanguageModel;
  },
) {
  const client = new ChatClient(opts.appKey, { endpoint: opts.endpoint });
  const agent = await client.connectAgent(opts.threadId, {
    secret: opts.secret,
    agentId: "ai-sdk-agent",
  });
  agent.on("run:pending", async (run: { runId: string; messageId: string }) => {
    // The conversation up to this run's message, as UIMessages.
    const view = agent.view;
    const history: UIMessage[] = view.getMessages().filter((m) =>
      m.messageId !== run.messageId && m.status !== "streaming"
    )
      .map((m) => toUIMessage(m));
    const signal = cancelSignal(agent, run.runId);
    const answer = async (messages: UIMessage[]) =>
      streamText({
        model: opts.model,
        tools,
        messages: await convertToModelMessages(messages, { tools }),
        abortSignal: signal,
        stopWhen: stepCountIs(4),
      })
        .toUIMessageStream({ onError: (e) => (e instanceof Error ? e.message : String(e)) });
    await pipeUIMessageStream(agent, run.runId, await answer(history), {
      signal,
      onToolApproval: ({ message }) => answer([...history, message]),
    });
  });
  return () => client.disconnect();
}
