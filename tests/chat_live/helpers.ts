// Shared helpers of the chat live tests: clients against a started server, and bounded waits.
import { ChatClient, type ChatClientOptions } from "../../sdk/client/chat_client.ts";
import type { TestServer } from "../helpers/server.ts";

/** A ChatClient for `server` (app key1 unless given). */
export function client(
  server: TestServer,
  opts: ChatClientOptions & { appKey?: string } = {},
): ChatClient {
  const { appKey, ...rest } = opts;
  return new ChatClient(appKey ?? "key1", {
    endpoint: `ws://127.0.0.1:${server.port}/socket`,
    reconnectAfterMs: 50,
    rejoinAfterMs: 50,
    ...rest,
  });
}

/** Polls `pred` until it is truthy (default 30 s: a loaded machine is slow), else throws. */
export async function until<T>(
  pred: () => T | undefined | null | false,
  what = "condition",
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (true) {
    const v = pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves with the reason of a rejected promise (fails when it resolves). */
export async function reasonOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { reason?: string }).reason ?? String(err);
  }
  throw new Error("expected a rejection");
}

/** A thread id unique to one test. */
export function tid(prefix = "t"): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}
