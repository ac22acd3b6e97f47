// Drives the playground page in headless Chromium (playwright-core, /usr/bin/chromium; install
// it with .ci/browser_deps): channel events, live object changes, and a chat with the demo agent
// that streams token by token, is cancelled, regenerates into a branch and asks for a tool, and
// comes back after a reload.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { startServer, type TestServer } from "../helpers/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Polls `read` until `ok` holds (10 s cap); returns the last value. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, 25));
    last = await read();
  }
  return last;
}

/** The last assistant message on the page (text, streaming/complete status, meta line). */
const lastAssistant = (page: Page) =>
  page.evaluate(`(() => {
    const all = document.querySelectorAll("#chat-messages .msg.assistant");
    const el = all[all.length - 1];
    return el ? { text: el.querySelector(".text").textContent, status: el.dataset.status, meta: el.querySelector(".meta").textContent } : null;
  })()`) as Promise<{ text: string; status: string; meta: string } | null>;

async function withPlayground(
  fn: (
    page: Page,
    server: TestServer,
    creds: { id: string; key: string; secret: string },
  ) => Promise<void>,
) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser_deps`);
  const server = await startServer({ apps: null });
  let browser: Browser | undefined;
  try {
    const out = await until(
      () => Promise.resolve(server.output()),
      (o) => /app secret:\s+\S+\n/.test(o),
      "dev app banner",
    );
    const get = (l: string) => out.match(new RegExp(`app ${l}:\\s+(\\S+)`))![1];
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(server.baseUrl + "/");
    await until(
      () => page.textContent("#status"),
      (t) => /connected, socket/.test(t ?? ""),
      "socket connected",
    );
    await fn(page, server, { id: get("id"), key: get("key"), secret: get("secret") });
    assert.deepEqual(errors, [], "no uncaught page errors");
  } finally {
    await browser?.close();
    await server.stop();
  }
}

Deno.test({
  name:
    "playground: channel events, live object, streamed chat with cancel, branches and tool approval",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withPlayground(async (page, server, app) => {
      // The page shows the dev app key and never the secret.
      assert.equal(await page.textContent("#app-key"), app.key);
      assert.ok(!(await page.content()).includes(app.secret));

      // Channels: subscribe, trigger through the playground API, see the event arrive.
      await page.click("#ch-sub");
      await until(() => page.textContent("#ch-log"), (t) =>
        /subscribed to playground/.test(t ?? ""), "subscribed");
      await page.fill("#ch-data", '{"text":"from the browser test"}');
      await page.click("#ch-trigger");
      await until(() =>
        page.textContent("#ch-log"), (t) =>
        /greeting #\d+ \{"text":"from the browser test"\}/.test(t ?? ""), "triggered event");

      // Durable Object: watch, increment from the page, then a backend write shows live.
      await page.click("#obj-watch");
      await until(() =>
        page.textContent("#obj-log"), (t) =>
        /snapshot/.test(t ?? ""), "object snapshot");
      await page.click("#obj-inc");
      await until(() =>
        page.textContent("#obj-state"), (t) =>
        /"clicks": 1/.test(t ?? ""), "clicks = 1");
      const put = await fetch(`${server.baseUrl}/api/v1/objects/${app.id}/counter/demo/label`, {
        method: "PUT",
        headers: {
          "x-app-key": app.key,
          "x-app-secret": app.secret,
          "content-type": "application/json",
        },
        body: JSON.stringify({ value: "set by the backend" }),
      });
      assert.equal(put.status, 200);
      await put.body?.cancel();
      await until(() =>
        page.textContent("#obj-state"), (t) =>
        /"label": "set by the backend"/.test(t ?? ""), "backend write");
      assert.match((await page.textContent("#obj-logid"))!, /^\d+$/);

      // Chat: connect (starts the demo agent), send, watch the answer grow token by token.
      await page.click("#chat-connect");
      await until(
        () =>
          page.isEnabled("#chat-send"),
        Boolean,
        "chat connected",
      );
      await page.fill("#chat-input", "hello agent");
      await page.press("#chat-input", "Enter");
      const partials = new Set<string>();
      const done = await until(async () => {
        const m = await lastAssistant(page);
        if (m && m.status === "streaming" && m.text !== "") {
          partials.add(m.text);
        }
        return m;
      }, (m) =>
        m !== null && m.status === "complete", "complete answer");
      assert.ok(
        partials.size >= 3,
        `the answer grew in steps (saw ${partials.size} partial texts)`,
      );
      for (const p of partials) {
        assert.ok(done!.text.startsWith(p.trimEnd().slice(0, 20)), "partials are prefixes");
      }
      assert.match(done!.text, /hello agent/);

      // Cancel: a second answer stops part-way and is shown as cancelled.
      await page.fill("#chat-input", "tell me more");
      await page.press("#chat-input", "Enter");
      await until(() =>
        lastAssistant(page), (m) =>
        m?.status === "streaming" && m.text.length > 0, "second answer streaming");
      await page.click("#chat-cancel");
      const cancelled = await until(() =>
        lastAssistant(page), (m) =>
        /cancelled/.test(m?.meta ?? ""), "cancelled run");
      assert.ok(!/tool approval/.test(cancelled!.text) || cancelled!.text.length < 400);
      assert.ok(await page.isDisabled("#chat-cancel"), "nothing left to cancel");

      // Regenerate: a new branch beside the cancelled answer, with a branch switcher.
      await page.click("#chat-messages .msg.assistant:last-child button.regenerate");
      await until(() =>
        page.textContent("#chat-messages .msg.assistant:last-child .branch-pos"), (t) =>
        t === "2/2", "branch 2/2");
      await until(() =>
        lastAssistant(page), (m) =>
        m?.status === "complete" && /another take/.test(m.text), "regenerated answer");
      await page.click("#chat-messages .msg.assistant:last-child button.branch >> nth=0");
      await until(() =>
        page.textContent("#chat-messages .msg.assistant:last-child .branch-pos"), (t) =>
        t === "1/2", "back to branch 1/2");

      // Tool approval: the agent suspends, the page asks, approving resumes the run.
      await page.click("#chat-messages .msg.assistant:last-child button.branch >> nth=1");
      await page.fill("#chat-input", "What is the weather in Porto?");
      await page.press("#chat-input", "Enter");
      await page.waitForSelector("#tool-approve", { timeout: 10_000 });
      assert.match((await page.textContent("#chat-tool"))!, /get_weather\(\{"city":"Porto"\}\)/);
      await page.click("#tool-approve");
      await until(() =>
        lastAssistant(page), (m) =>
        m?.status === "complete" && /Porto is sunny/.test(m.text), "answer after approval");
      assert.ok(await page.isHidden("#chat-tool"));

      // A reload comes back to the same thread, reconnected, with the conversation shown.
      const thread = await page.inputValue("#chat-thread");
      await page.reload();
      await until(
        () =>
          page.isEnabled("#chat-send"),
        Boolean,
        "chat reconnected after the reload",
      );
      assert.equal(await page.inputValue("#chat-thread"), thread);
      await until(() =>
        lastAssistant(page), (m) =>
        m?.status === "complete" && /Porto is sunny/.test(m.text), "conversation after the reload");
      assert.match((await page.textContent("#chat-messages"))!, /hello agent/);
    }),
});
