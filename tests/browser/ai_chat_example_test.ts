// Drives examples/ai-chat in headless Chromium: the page's useChat (@ai-sdk/react) over
// SwitchboardChatTransport, the example's streamText agent on the local mock model, started
// with no flags but --data-dir (it reads the development app the server keeps there). A fresh
// random thread from a bare URL; send and stream; tool approval; reasoning in the same place
// after a reload; a reload mid-answer that resumes it; Stop reflecting the run and cancelling
// it after a reload. With SCREENSHOT=path it saves the page while the answer after
// the tool approval streams (docs/ai-chat.png).
// Also: serve.ts's argument problems are one line on stderr, never a stack trace.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { type Browser, chromium, type Page } from "playwright-core";
import { startServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { until } from "../helpers/until.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
];
const root = new URL("../../", import.meta.url).pathname;
const SERVE = "examples/ai-chat/serve.ts";

/** The text of the last agent bubble on the page. */
const lastAgent = (page: Page) =>
  page.evaluate(
    `(() => { const all = document.querySelectorAll(".msg.assistant:not(.typing)"); const el = all[all.length - 1]; return el ? el.textContent : ""; })()`,
  ) as Promise<string>;
/** Each bubble as `role: class,class,...` of its parts, in page order. */
const layout = (page: Page) =>
  page.evaluate(
    `[...document.querySelectorAll(".msg:not(.typing)")].map((m) => m.classList[1] + ": " + [...m.children].map((c) => c.className).filter((c) => c !== "cursor").join(","))`,
  ) as Promise<string[]>;
/** How many agent bubbles the page shows. */
const agentCount = (page: Page) => page.locator(".msg.assistant:not(.typing)").count();
const status = (page: Page) => page.textContent("#status").then((t) => t ?? "");

async function send(page: Page, text: string) {
  await page.fill("#input", text);
  await page.click("#send");
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");

Deno.test({
  name: "examples/ai-chat: useChat over Switchboard in a browser",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser_deps`);
  const server = await startServer({ apps: null }); // the development app, kept in its data dir
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const example = spawn(Deno.execPath(), [
    "run",
    "-A",
    SERVE,
    "--data-dir",
    server.dataDir,
    "--port",
    String(port),
  ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  example.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  example.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  let browser: Browser | undefined;
  try {
    await until(
      () => Promise.resolve(out),
      (o) => o.includes("AI chat example on"),
      "example server",
    );
    assert.match(out, /the development app in /);
    // A second copy on the same port: one line, no stack trace.
    const busy = await serveFails(["--data-dir", server.dataDir, "--port", String(port)]);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /^ai-chat: cannot listen on 127\.0\.0\.1:\d+: [^\n]+\n$/);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    const page = await browser.newPage({ viewport: { width: 760, height: 460 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));

    // A bare URL starts a fresh random thread: its whole id goes into the fragment.
    await page.goto(`http://127.0.0.1:${port}/`);
    await until(() => status(page), (s) => s === "ready", "chat ready");
    const threadId = decodeURIComponent((await page.evaluate("location.hash") as string).slice(1));
    assert.match(
      threadId,
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      "a whole UUID",
    );
    assert.equal(await page.getAttribute("#thread", "title"), threadId);
    assert.ok(await page.isDisabled("#stop"), "nothing to stop yet");

    await send(page, "hello there");
    await until(
      () => lastAgent(page),
      (t) => t.includes("You said: hello there"),
      "streamed answer",
    );
    await until(() => status(page), (s) => s === "ready", "answer finished");
    assert.ok(await page.isDisabled("#stop"), "Stop is off once the run ended");

    await send(page, "weather in Paris");
    await page.waitForSelector(".tool[data-state=approval-requested] button.approve", {
      timeout: 20_000,
    });
    await page.click("button.approve");
    const shot = Deno.env.get("SCREENSHOT"); // docs/ai-sdk.md's picture: the answer streaming
    if (shot) {
      await until(() => lastAgent(page), (t) => t.includes("sunny"), "answer streaming").then(() =>
        page.screenshot({ path: shot })
      );
    }
    await until(
      () => lastAgent(page),
      (t) => t.includes("It is sunny in Paris"),
      "answer after approval",
    );
    // At the end the final message's other parts arrive: the tool's output and the reasoning.
    await page.waitForSelector(".msg.assistant .tool[data-state=output-available]", {
      timeout: 20_000,
    });
    await until(() => status(page), (s) => s === "ready", "weather answer finished");
    assert.match(await lastAgent(page), /"celsius":21/);
    assert.match(await lastAgent(page), /The tool answered/);
    const before = await layout(page);
    assert.deepEqual(before.filter((b) => b.startsWith("user")), ["user: text", "user: text"]);
    assert.ok(
      before.filter((b) => b.startsWith("assistant")).every((b) =>
        b.startsWith("assistant: reasoning")
      ),
      before.join(" | "),
    );

    // Reload: the same thread, every bubble as it was (reasoning first, where it was).
    await page.reload();
    await until(() => status(page), (s) => s === "ready", "ready after a reload");
    assert.equal(
      decodeURIComponent((await page.evaluate("location.hash") as string).slice(1)),
      threadId,
    );
    assert.deepEqual(await layout(page), before);

    // A reload in the middle of an answer: the reloaded page resumes it to the end.
    await send(page, words(40));
    await until(() => lastAgent(page), (t) => t.includes("word2"), "long answer started");
    await page.reload();
    await until(
      () => lastAgent(page),
      (t) => t.includes("word39"),
      "resumed answer completed after reload",
    );
    await until(() => status(page), (s) => s === "ready", "ready after resume");
    assert.match(
      (await page.textContent("#log"))!,
      /hello there[\s\S]*It is sunny in Paris[\s\S]*word39/,
      "the conversation survived",
    );

    // A 300-word answer (18 s at the mock's 60 ms a word): Stop reflects the run, survives a
    // reload, and cancels it; the answer stays partial.
    const answers = await agentCount(page);
    await send(page, words(300));
    // (the 40-word answer above starts the same way: wait for the new bubble)
    await until(() => agentCount(page), (n) => n === answers + 1, "a bubble for the new answer");
    await until(
      () => lastAgent(page),
      (t) => t.includes("You said: word0 word1 word2 word3"),
      "second long answer started",
    );
    assert.ok(await page.isEnabled("#stop"), "Stop is on while the run streams");
    assert.equal(
      await page.locator(".msg.assistant.streaming").count(),
      1,
      "the streaming bubble is marked",
    );
    await page.reload();
    await until(
      () => agentCount(page),
      (n) => n === answers + 1,
      "the answer's bubble after the reload",
    );
    await until(() => lastAgent(page), (t) => t.includes("word8"), "resumed after the reload");
    await until(() => page.isEnabled("#stop"), Boolean, "Stop is on again after the reload");
    await page.click("#stop");
    await until(() => status(page), (s) => s === "ready", "stopped");
    assert.ok(await page.isDisabled("#stop"));
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!(await lastAgent(page)).includes("word299"), "the stopped answer did not finish");

    // "New chat": another fresh thread, empty.
    await page.click("#new-chat");
    await until(
      () => page.evaluate("location.hash") as Promise<string>,
      (h) => h.length > 1 && decodeURIComponent(h.slice(1)) !== threadId,
      "a new thread id",
    );
    await until(() => status(page), (s) => s === "ready", "new chat ready");
    assert.equal(await page.locator(".msg").count(), 0);
    assert.deepEqual(errors, [], "no uncaught page errors");
  } finally {
    await browser?.close();
    example.kill("SIGTERM");
    await new Promise((r) => example.exitCode !== null ? r(null) : example.on("exit", r));
    await server.stop();
  }
});

/** Runs serve.ts with `args` (and no APP_* variables) in `cwd`; its exit code and stderr. */
async function serveFails(args: string[], cwd = root) {
  const env = Deno.env.toObject();
  for (const k of ["APP_KEY", "APP_SECRET", "SWITCHBOARD_SOCKET", "DATA_DIR", "PORT"]) {
    delete env[k];
  }
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", root + SERVE, ...args],
    cwd,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: run.code, stderr: new TextDecoder().decode(run.stderr) };
}

Deno.test("examples/ai-chat: serve.ts explains a missing flag or server in one line", async () => {
  const empty = tempDir("sb-ai-chat-");
  const cases: [string[], number, RegExp][] = [
    [
      ["--data-dir", empty],
      2,
      /no --key\/--secret and no development app at .*development-app\.json: start Switchboard first/,
    ],
    [["--key", "k"], 2, /--key was given without --secret/],
    [["--secret", "s"], 2, /--secret was given without --key/],
    [["--port"], 2, /--port needs a value/],
    [["--nope"], 2, /unknown argument --nope/],
    [
      ["--key", "k", "--secret", "s", "--url", "ws://127.0.0.1:9/socket"],
      1,
      /Switchboard is not reachable at ws:\/\/127\.0\.0\.1:9\/socket/,
    ],
  ];
  // No flags at all, in a directory where no server has run.
  const bare = await serveFails([], empty);
  assert.equal(bare.code, 2);
  assert.match(
    bare.stderr,
    /^ai-chat: no --key\/--secret and no development app at .*\/data\/development-app\.json[^\n]*\n$/,
  );
  for (const [args, code, line] of cases) {
    const r = await serveFails(args);
    assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
    assert.equal(
      r.stderr.trim().split("\n").length,
      1,
      `${args.join(" ")}: one line, got\n${r.stderr}`,
    );
    assert.match(r.stderr, /^ai-chat: /);
    assert.match(r.stderr, line);
  }
});
