/**
 * What the playground's demo agent says: canned, deterministic answers (no model involved),
 * long enough to watch them stream and to cancel them mid-way.
 */

/** One planned answer: tokens to stream, optionally pausing for a tool call half-way. */
export interface DemoPlan {
  /** Tokens streamed first. */
  tokens: string[];
  /** A tool call to ask approval for after `tokens`, then `approved` or `rejected` tokens. */
  tool?: { name: string; args: Record<string, unknown>; approved: string[]; rejected: string[] };
}

/** Splits text into word tokens that keep their leading space, like a model's tokens. */
export function tokenize(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/**
 * Plans the reply to `prompt`. `variant` counts regenerations of the same message, so each
 * branch reads differently. Prompts mentioning "weather" or "tool" exercise tool approval.
 */
export function planReply(prompt: string, variant: number): DemoPlan {
  const text = prompt.trim().replace(/\s+/g, " ").slice(0, 200) || "(empty message)";
  const weather = /\b(weather|tool)\b/i.exec(text);
  if (weather) {
    const city = /\bin ([A-Z][\w-]*(?: [A-Z][\w-]*)?)/.exec(text)?.[1] ?? "Lisbon";
    return {
      tokens: tokenize(`I can look that up with the get_weather tool for ${city}. May I call it?`),
      tool: {
        name: "get_weather",
        args: { city },
        approved: tokenize(
          ` The tool says: ${city} is sunny, 21 °C, with a light breeze from the west.`,
        ),
        rejected: tokenize(" Understood, I will not call the tool. Ask me anything else."),
      },
    };
  }
  const openings = [
    "Hello! I am the Switchboard demo agent.",
    "Here is another take, regenerated into a new branch.",
    "Third answer on this branch, still streamed token by token.",
  ];
  const opening = openings[variant % openings.length] +
    (variant >= openings.length ? ` (variant ${variant + 1})` : "");
  return {
    tokens: tokenize(
      `${opening} You said: "${text}". Each word you see arrives as a token pushed by an agent ` +
        "joined to this thread over the same WebSocket protocol your own agents use; the server " +
        "rolls tokens up every 40 ms and every subscriber sees the same stream. Press Cancel to " +
        "stop me, Regenerate to branch, or mention the weather to see a tool approval.",
    ),
  };
}
