/**
 * Runs the AI chat example: bundles the page (React, the AI SDK, Switchboard's transport) with
 * Bun, serves it, and puts an AI SDK agent on each thread a page opens.
 *
 *   npx deno task start                              # Switchboard on :4000, data in ./data
 *   npx deno run -A examples/ai-chat/serve.ts        # http://localhost:3000/ (same directory)
 *
 * Without --key and --secret it uses the development app, read from the file the server keeps
 * in its data dir (`./data/development-app.json`, or --data-dir), which also names the server's
 * socket. Otherwise: --key APP_KEY --secret APP_SECRET [--url ws://HOST:PORT/socket]; any app
 * that allows chat without tokens (`enable_user_authentication: 0`). Also: --port (3000),
 * OPENAI_API_KEY=... for a real model. Each flag may come from an environment variable
 * (APP_KEY, APP_SECRET, SWITCHBOARD_SOCKET, DATA_DIR, PORT). A problem is one line on stderr.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { runAgent } from "./agent.ts";
import { pickModel } from "./model.ts";
import { PAGE_HTML } from "./page_html.ts";

const USAGE =
  "usage: serve.ts [--key APP_KEY --secret APP_SECRET] [--url ws://HOST:PORT/socket] [--data-dir ./data] [--port 3000]";
const FLAGS = ["key", "secret", "url", "data-dir", "port"];

/** Stops with one line on stderr (no stack trace) and exit code 2. */
function fail(message: string, code = 2): never {
  console.error(`ai-chat: ${message}`);
  Deno.exit(code);
}

/** The flags given (`--name value` or `--name=value`); unknown flags and missing values fail. */
function parseFlags(argv: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--help" || argv[i] === "-h") {
      console.log(USAGE);
      Deno.exit(0);
    }
    const [name, inline] = argv[i].split(/=(.*)/s);
    if (!name.startsWith("--") || !FLAGS.includes(name.slice(2))) {
      fail(`unknown argument ${name} (${USAGE})`);
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === "") fail(`${name} needs a value`);
    flags.set(name.slice(2), value);
  }
  return flags;
}

const flags = parseFlags(Deno.args);
const opt = (name: string, env: string) => flags.get(name) ?? (Deno.env.get(env) || undefined);

/** The app and socket to use: flags, else the development app file in the data dir. */
function credentials(): { appKey: string; secret: string; endpoint: string; source: string } {
  const key = opt("key", "APP_KEY"), secret = opt("secret", "APP_SECRET");
  const url = opt("url", "SWITCHBOARD_SOCKET");
  if (key !== undefined || secret !== undefined) {
    if (key === undefined) fail("--secret was given without --key (or APP_KEY)");
    if (secret === undefined) fail("--key was given without --secret (or APP_SECRET)");
    return {
      appKey: key,
      secret,
      endpoint: url ?? "ws://localhost:4000/socket",
      source: `app ${key}`,
    };
  }
  const dataDir = opt("data-dir", "DATA_DIR") ?? "./data";
  const file = resolve(dataDir, "development-app.json");
  if (!existsSync(file)) {
    fail(
      `no --key/--secret and no development app at ${file}: start Switchboard first (npx deno task start) in this directory, or pass --data-dir, or --key and --secret`,
    );
  }
  let dev: { app_key?: unknown; app_secret?: unknown; socket?: unknown };
  try {
    dev = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    fail(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (
    typeof dev.app_key !== "string" || typeof dev.app_secret !== "string" ||
    typeof dev.socket !== "string"
  ) {
    fail(`${file} is not a development app file`);
  }
  return {
    appKey: dev.app_key,
    secret: dev.app_secret,
    endpoint: url ?? dev.socket,
    source: `the development app in ${dataDir}`,
  };
}

const { appKey, secret, endpoint, source } = credentials();
const port = Number(opt("port", "PORT") ?? "3000");
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  fail(`--port must be a port number, got "${opt("port", "PORT")}"`);
}

// Is Switchboard there? One line now beats a failed agent join later.
const health = endpoint.replace(/^ws/, "http").replace(/\/socket(\/websocket)?\/?$/, "") +
  "/healthz";
try {
  const res = await fetch(health, { signal: AbortSignal.timeout(5000) });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`answered ${res.status}`);
} catch (err) {
  fail(
    `Switchboard is not reachable at ${endpoint} (${
      (err as Error).message
    }): start it first (npx deno task start) or pass --url`,
    1,
  );
}

// One browser bundle of page.ts and everything it imports.
const here = new URL(".", import.meta.url).pathname;
const root = join(here, "../..");
const out = join(root, "dist/ai-chat");
mkdirSync(out, { recursive: true });
try {
  execFileSync(join(root, "node_modules/.bin/bun"), [
    "build",
    join(here, "page.ts"),
    "--target",
    "browser",
    "--outdir",
    out,
    "--minify",
  ], { stdio: ["ignore", "ignore", "inherit"] });
} catch {
  fail("bundling page.ts with bun failed (see above; run npm ci first)", 1);
}
const bundle = readFileSync(join(out, "page.js"));

const { model, name } = await pickModel();
const agents = new Map<string, Promise<() => void>>();
const html = PAGE_HTML.replace(
  "/*CONFIG*/",
  `window.AI_CHAT=${JSON.stringify({ appKey, endpoint })};`,
);

const handler = async (req: Request) => {
  const url = new URL(req.url);
  if (url.pathname === "/") {
    return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
  }
  if (url.pathname === "/favicon.ico") return new Response(null, { status: 204 });
  if (url.pathname === "/page.js") {
    return new Response(bundle, { headers: { "content-type": "text/javascript" } });
  }
  if (url.pathname === "/api/agent" && req.method === "POST") {
    const { threadId } = await req.json().catch(() => ({}));
    if (typeof threadId !== "string" || threadId === "" || threadId.length > 200) {
      return new Response("bad thread", { status: 400 });
    }
    if (!agents.has(threadId)) {
      const joining = runAgent({ endpoint, appKey, secret, threadId, model });
      joining.catch(() => agents.delete(threadId)); // a later page load tries again
      agents.set(threadId, joining);
    }
    try {
      await agents.get(threadId);
    } catch (err) {
      return new Response(`the agent could not join: ${(err as Error).message}`, { status: 502 });
    }
    return new Response("{}", { headers: { "content-type": "application/json" } });
  }
  return new Response("not found", { status: 404 });
};

let server: Deno.HttpServer;
try {
  server = Deno.serve({
    port,
    hostname: "127.0.0.1",
    onListen: ({ port }) =>
      console.log(`AI chat example on http://localhost:${port}/ (${name}, ${source}, ${endpoint})`),
  }, handler);
} catch (err) {
  fail(`cannot listen on 127.0.0.1:${port}: ${(err as Error).message} (pass --port)`, 1);
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, async () => {
    for (const stop of agents.values()) await stop.then((s) => s(), () => {});
    await server.shutdown();
    Deno.exit(0);
  });
}
