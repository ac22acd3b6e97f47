// examples/ai-chat copied out of the repository into the consumer folder, its imports of the
// repository's SDK modules rewritten to the package names (the only change), installed from
// the tarballs and run: the page bundle builds from the installed packages, and the example's
// streamText agent answers a message on a thread.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ChatClient } from "../../sdk/client/mod.ts";
import { Switchboard } from "../../sdk/server/mod.ts";
import { startServer } from "../helpers/server.ts";
import { consumer, DENO, freePort, root, start, until } from "./helpers.ts";

/** `../../sdk/<name>/mod.ts` (any depth) becomes `@switchboard/<name>`. */
export function toPackageImports(source: string): string {
  return source.replace(
    /(["'])(?:\.\.\/)+sdk\/(client|server|react|ai)\/mod\.ts\1/g,
    "$1@switchboard/$2$1",
  );
}

Deno.test({
  name: "packages: examples/ai-chat copied out and installed from the tarballs runs and answers",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { dir } = await consumer();
  const from = join(root, "examples/ai-chat");
  const to = join(dir, "examples/ai-chat");
  mkdirSync(to, { recursive: true });
  for (const file of readdirSync(from)) {
    const text = toPackageImports(readFileSync(join(from, file), "utf8"));
    // Nothing else may reach back into the repository.
    assert.doesNotMatch(text, /from\s+["']\.\.\//, `${file} still imports a repository path`);
    writeFileSync(join(to, file), text);
  }

  const server = await startServer({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const endpoint = `ws://127.0.0.1:${server.port}/socket`;
  const port = freePort();
  const example = start(DENO, [
    "run",
    "-A",
    "examples/ai-chat/serve.ts",
    "--key",
    "key1",
    "--secret",
    "secret1",
    "--url",
    endpoint,
    "--port",
    String(port),
  ], { cwd: dir });
  const chat = new ChatClient("key1", { endpoint });
  try {
    await example.waitFor(/AI chat example on/);
    const base = `http://127.0.0.1:${port}`;
    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /page\.js/);
    const bundle = await (await fetch(`${base}/page.js`)).text();
    assert.match(
      bundle,
      /resumeStreamIsReplay/,
      "the page bundle holds the transport from @switchboard/ai",
    );

    // The page's first call puts the example's agent on the thread; then a person writes.
    const threadId = `t-${crypto.randomUUID()}`;
    const agent = await fetch(`${base}/api/agent`, {
      method: "POST",
      body: JSON.stringify({ threadId }),
    });
    assert.equal(agent.status, 200);
    await agent.body?.cancel();
    const session = await chat.connect(threadId, { clientId: "you" });
    await session.view.send("hello from outside");
    const rest = new Switchboard({ baseUrl: server.baseUrl, appKey: "key1", appSecret: "secret1" });
    const messages = await until(
      () => rest.chat.listMessages(threadId).then((d) => JSON.stringify(d.data)),
      (t) => t.includes("You said: hello from outside"),
      "the example agent's answer",
    );
    assert.match(messages, /hello from outside/);
  } finally {
    chat.disconnect();
    await example.stop();
    await server.stop();
  }
});
