/**
 * The example's model: a local mock (no network) that streams "You said: ..." word by word,
 * thinks first, and for a message containing "weather" calls the `weather` tool (which needs a
 * human's approval) before answering; or OpenAI's when OPENAI_API_KEY is set.
 */
import type { LanguageModel } from "ai";
import { MockLanguageModelV4, simulateReadableStream } from "ai/test";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** The last user text and whether a tool has answered it already. */
function promptOf(prompt: unknown): { text: string; toolDone: boolean } {
  const messages = prompt as {
    role: string;
    content: { type: string; text?: string }[] | string;
  }[];
  const at = messages.findLastIndex((m) => m.role === "user");
  const lastUser = messages[at];
  const text = typeof lastUser?.content === "string"
    ? lastUser.content
    : (lastUser?.content ?? []).map((p) => p.text ?? "").join("");
  // A tool result after the last user message: the tool has run for this question.
  return { text, toolDone: messages.slice(at + 1).some((m) => m.role === "tool") };
}

/** A local model that needs no key and no network. */
export function mockModel(): LanguageModel {
  return new MockLanguageModelV4({
    doStream: ({ prompt }) => {
      const { text, toolDone } = promptOf(prompt);
      const words = (toolDone ? `It is sunny in ${cityOf(text)}, 21 °C.` : `You said: ${text}`)
        .split(/(?<= )/);
      const chunks: unknown[] = [
        { type: "reasoning-start", id: "r" },
        {
          type: "reasoning-delta",
          id: "r",
          delta: toolDone ? "The tool answered." : "The user wrote something.",
        },
        { type: "reasoning-end", id: "r" },
      ];
      if (/weather/i.test(text) && !toolDone) {
        chunks.push(
          {
            type: "tool-call",
            toolCallId: `call-${Date.now()}`,
            toolName: "weather",
            input: JSON.stringify({ city: cityOf(text) }),
          },
          { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage },
        );
      } else {
        chunks.push(
          { type: "text-start", id: "t" },
          ...words.map((delta) => ({ type: "text-delta", id: "t", delta })),
          { type: "text-end", id: "t" },
          { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
        );
      }
      return Promise.resolve({
        stream: simulateReadableStream({ chunks: chunks as never[], chunkDelayInMs: 60 }),
      });
    },
  });
}

function cityOf(text: string): string {
  return text.match(/in ([A-Z][a-z]+)/)?.[1] ?? "Oslo";
}

/** OpenAI's model when OPENAI_API_KEY is set (OPENAI_MODEL, default gpt-4o-mini), else the mock. */
export async function pickModel(): Promise<{ model: LanguageModel; name: string }> {
  if (!Deno.env.get("OPENAI_API_KEY")) return { model: mockModel(), name: "local mock model" };
  const { openai } = await import("@ai-sdk/openai");
  const id = Deno.env.get("OPENAI_MODEL") ?? "gpt-4o-mini";
  return { model: openai(id), name: `openai ${id}` };
}
