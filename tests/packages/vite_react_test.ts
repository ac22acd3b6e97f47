// A Vite + React 19 + TypeScript app on the installed tarballs (tests/packages/fixtures/
// vite-app: strict, moduleResolution "bundler", no Vite config at all): `tsc --noEmit` and
// `vite build` are clean, the bundle holds one copy of React and of the client SDK, and the
// built page in headless Chromium against the server (the binary under SWITCHBOARD_BIN)
// receives a channel event, follows an object, shows presence, streams an AI answer from an
// agent using pipeUIMessageStream with a mock model, and resumes it after a reload.
import assert from "node:assert/strict";
import { cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { startServer } from "../helpers/server.ts";
import { call } from "../pubsub/helpers.ts";
import { consumer, DENO, root, run, runOk, start, until } from "./helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
/** Where the test leaves its screenshot (dist/ is not committed). */
export const SCREENSHOT = join(root, "dist/packages-vite-app.png");

const text = (page: Page, selector: string) => page.textContent(selector).then((t) => t ?? "");
const lastAgent = (page: Page) =>
  page.evaluate(
    `(() => { const all = document.querySelectorAll(".msg.assistant"); return all.length ? all[all.length - 1].textContent : ""; })()`,
  ) as Promise<string>;

Deno.test({
  name: "packages: a Vite + React 19 app on the tarballs type-checks, builds and runs in Chromium",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser_deps`);
  const { dir } = await consumer();
  cpSync(join(root, "tests/packages/fixtures/vite-app"), dir, { recursive: true });

  // The app's own TypeScript (strict) and, with skipLibCheck off, the packages' declarations.
  await runOk(join(dir, "node_modules/.bin/tsc"), ["--noEmit", "-p", "."], { cwd: dir });
  await runOk(join(dir, "node_modules/.bin/tsc"), ["-p", "tsconfig.libs.json"], { cwd: dir });

  // `vite build` with no config; --sourcemap only to list the modules that went in.
  const build = await run(join(dir, "node_modules/.bin/vite"), ["build", "--sourcemap"], {
    cwd: dir,
  });
  // deno-lint-ignore no-control-regex
  const log = build.out.replace(/\x1b\[[0-9;]*m/g, "");
  assert.equal(build.code, 0, log);
  assert.doesNotMatch(log, /error/i, log);
  // Vite's only remark is about a "use client" directive inside swr (@ai-sdk/react's
  // dependency); nothing about our packages.
  assert.doesNotMatch(log, /@switchboard/, log);
  const warnings = [...log.matchAll(/^\[([A-Z_]+)\]/gm)].map((m) => m[1]);
  assert.ok(
    warnings.every((w) => w === "MODULE_LEVEL_DIRECTIVE"),
    `unexpected build warnings: ${warnings}`,
  );
  const mapFile = readdirSync(join(dir, "dist/assets")).find((f) => f.endsWith(".js.map"))!;
  const sources: string[] =
    JSON.parse(readFileSync(join(dir, "dist/assets", mapFile), "utf8")).sources;
  const count = (re: RegExp) => sources.filter((s) => re.test(s)).length;
  assert.equal(
    count(/\/react\/cjs\/react\.production\.js$/),
    1,
    `one React: ${sources.filter((s) => /react/.test(s))}`,
  );
  assert.equal(count(/\/react-dom\/cjs\/react-dom-client\.production\.js$/), 1, "one react-dom");
  assert.equal(
    count(/@switchboard\/client\/dist\/index\.js$/),
    1,
    "one client SDK, shared by react and ai",
  );
  assert.equal(count(/@switchboard\/(react|ai)\/dist\/index\.js$/), 2);
  assert.equal(count(/node_modules\/.*\/node_modules\//), 0, "no nested copies");

  const server = await startServer({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const thread = `t-${crypto.randomUUID()}`;
  const endpoint = `ws://127.0.0.1:${server.port}/socket`;
  const backend = start(DENO, ["run", "-A", "backend.mjs"], {
    cwd: dir,
    env: {
      SB_BASE_URL: server.baseUrl,
      SB_ENDPOINT: endpoint,
      SB_APP_KEY: "key1",
      SB_APP_SECRET: "secret1",
      SB_THREAD: thread,
    },
  });
  let browser: Browser | undefined;
  try {
    const port = (await backend.waitFor(/backend on (\d+)/))[1];
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const url = `http://127.0.0.1:${port}/?${new URLSearchParams({
      endpoint,
      key: "key1",
      thread,
    })}`;
    await page.goto(url);

    // Channel: joined, then an event triggered by the backend API arrives.
    await page.waitForSelector("#channel[data-status=joined]", { timeout: 20_000 });
    await call(server, "POST", "/api/apps/app-1/trigger", {
      channel: "news",
      event: "published",
      data: { title: "from npm" },
    });
    await until(
      () => text(page, "#channel"),
      (t) => t.includes('"title":"from npm"'),
      "channel event",
    );

    // Durable Object: followed live through a token from the app's /auth.
    await page.waitForSelector("#object[data-status=joined]", { timeout: 20_000 });
    await call(server, "PUT", "/api/v1/objects/app-1/counter/home/n", { value: 7 });
    await until(() => text(page, "#object"), (t) => t.includes('{"n":7}'), "object change");

    // Presence: the page itself is a member, as the backend's token says.
    await until(() => text(page, "#presence"), (t) => t.includes("reader (1)"), "presence");

    // AI chat: a long answer streams; a reload in the middle resumes it to the end.
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    await page.fill("#input", words);
    await page.click("#send");
    await until(() => lastAgent(page), (t) => t.includes("w3"), "streaming started");
    const before = await lastAgent(page);
    assert.ok(!before.includes("w39"), "the reload happens mid-answer");
    await page.reload();
    await until(
      () => lastAgent(page),
      (t) => t.includes(`You said: ${words}`),
      "resumed answer completed after reload",
    );
    await until(() => text(page, "#status"), (t) => t.includes("ready"), "chat ready after resume");
    const roles = await page.evaluate(
      `[...document.querySelectorAll(".msg")].map((e) => e.className)`,
    );
    assert.deepEqual(
      roles,
      ["msg user", "msg assistant"],
      "the question and one answer after the reload",
    );
    // The reloaded page replays the channel from serial 0 and re-reads the object.
    await until(
      () => text(page, "#channel"),
      (t) => t.includes('"title":"from npm"'),
      "channel replay after reload",
    );
    await until(() => text(page, "#object"), (t) => t.includes('{"n":7}'), "object after reload");
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.deepEqual(errors, [], "no page errors");
  } finally {
    await browser?.close();
    await backend.stop();
    await server.stop();
  }
});
