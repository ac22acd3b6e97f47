// Drives examples/ai-chat in headless Chromium: the page's useChat (@ai-sdk/react) over
// SwitchboardChatTransport, the example's streamText agent on the local mock model. Send and
// stream, tool approval, a reload that resumes the answer being streamed, and stop.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { type Browser, chromium, type Page } from "playwright-core";
import { startServer } from "../helpers/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"];
const root = new URL("../../", import.meta.url).pathname;

/** Polls `read` until `ok` holds (15 s cap); returns the last value. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}

/** The text of the last agent message on the page. */
const lastAgent = (page: Page) =>
  page.evaluate(`(() => { const all = document.querySelectorAll(".msg.assistant"); const el = all[all.length - 1]; return el ? el.textContent : ""; })()`) as Promise<string>;
const status = (page: Page) => page.textContent("#status").then((t) => t ?? "");

async function send(page: Page, text: string) {
  await page.fill("#input", text);
  await page.click("#send");
}

Deno.test({ name: "examples/ai-chat: useChat over Switchboard in a browser", sanitizeOps: false, sanitizeResources: false }, async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser_deps`);
  const server = await startServer({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const example = spawn(Deno.execPath(), ["run", "-A", "examples/ai-chat/serve.ts", "--key", "key1", "--secret", "secret1", "--url", `ws://127.0.0.1:${server.port}/socket`, "--port", String(port)], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  example.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  example.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  let browser: Browser | undefined;
  try {
    await until(() => Promise.resolve(out), (o) => o.includes("AI chat example on"), "example server");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${port}/#browser-thread`);
    await until(() => status(page), (s) => s.includes("ready"), "chat ready");

    await send(page, "hello there");
    await until(() => lastAgent(page), (t) => t.includes("You said: hello there"), "streamed answer");
    await until(() => status(page), (s) => s.includes("ready"), "answer finished");

    await send(page, "weather in Paris");
    await page.waitForSelector("text=Approve", { timeout: 15_000 });
    await page.click("text=Approve");
    await until(() => lastAgent(page), (t) => t.includes("It is sunny in Paris"), "answer after approval");
    // At the end the final message's other parts arrive: the tool's output and the reasoning.
    const answer = await until(() => lastAgent(page), (t) => t.includes("output-available"), "tool output");
    assert.match(answer, /"celsius":21/);
    assert.match(answer, /The tool answered/);

    // A long answer, then a reload in the middle: the reloaded page resumes it.
    const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
    await send(page, long);
    await until(() => lastAgent(page), (t) => t.includes("word2"), "long answer started");
    await page.reload();
    await until(() => lastAgent(page), (t) => t.includes("word39"), "resumed answer completed after reload");
    await until(() => status(page), (s) => s.includes("ready"), "ready after resume");

    // Stop cancels the run: the answer stays partial. It is 200 words (12 s at the mock model's
    // 60 ms a word), so a slow machine cannot finish it before the click lands.
    const longer = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
    await send(page, longer);
    await until(() => lastAgent(page), (t) => t.includes(`You said: word0`), "second long answer started");
    await page.click("#stop");
    await until(() => status(page), (s) => s.includes("ready"), "stopped");
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!(await lastAgent(page)).includes("word199"), "the stopped answer did not finish");
    assert.deepEqual(errors, [], "no uncaught page errors");
  } finally {
    await browser?.close();
    example.kill("SIGTERM");
    await server.stop();
  }
});
