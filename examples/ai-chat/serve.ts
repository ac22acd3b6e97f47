/**
 * Runs the AI chat example: bundles the page (React, the AI SDK, Switchboard's transport) with
 * Bun, serves it, and puts an AI SDK agent on each thread a page opens.
 *
 *   npx deno task start                               # Switchboard on :4000 (prints the dev app)
 *   deno run -A examples/ai-chat/serve.ts --key APP_KEY --secret APP_SECRET [--port 3000]
 *   open http://localhost:3000/                       # OPENAI_API_KEY=... for a real model
 *
 * Flags may also come from APP_KEY, APP_SECRET, SWITCHBOARD_SOCKET (default
 * ws://localhost:4000/socket) and PORT. The Switchboard app must allow chat without tokens
 * (`enable_user_authentication: 0`, as the development app does).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runAgent } from "./agent.ts";
import { pickModel } from "./model.ts";

function flag(name: string, env: string, fallback?: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 ? Deno.args[i + 1] : Deno.env.get(env) ?? fallback;
  if (v === undefined) throw new Error(`missing --${name} (or ${env})`);
  return v;
}

const here = new URL(".", import.meta.url).pathname;
const root = join(here, "../..");
const endpoint = flag("url", "SWITCHBOARD_SOCKET", "ws://localhost:4000/socket");
const appKey = flag("key", "APP_KEY");
const secret = flag("secret", "APP_SECRET");
const port = Number(flag("port", "PORT", "3000"));

// One browser bundle of page.ts and everything it imports.
const out = join(root, "dist/ai-chat");
mkdirSync(out, { recursive: true });
execFileSync(join(root, "node_modules/.bin/bun"), ["build", join(here, "page.ts"), "--target", "browser", "--outdir", out, "--minify"], { stdio: "inherit" });
const bundle = readFileSync(join(out, "page.js"));

const { model, name } = await pickModel();
const agents = new Map<string, Promise<() => void>>();
const html = `<!doctype html><meta charset="utf-8"><title>Switchboard + AI SDK</title>
<style>body{font:15px system-ui;max-width:720px;margin:2em auto}.msg{margin:.5em 0}.reasoning{color:#888}.tool{color:#06c}</style>
<div id="root"></div><script>window.AI_CHAT=${JSON.stringify({ appKey, endpoint })}</script><script type="module" src="/page.js"></script>`;

const server = Deno.serve({ port, hostname: "127.0.0.1", onListen: ({ port }) => console.log(`AI chat example on http://127.0.0.1:${port}/ (${name})`) }, async (req) => {
  const url = new URL(req.url);
  if (url.pathname === "/") return new Response(html, { headers: { "content-type": "text/html" } });
  if (url.pathname === "/page.js") return new Response(bundle, { headers: { "content-type": "text/javascript" } });
  if (url.pathname === "/api/agent" && req.method === "POST") {
    const { threadId } = await req.json();
    if (typeof threadId !== "string" || threadId === "" || threadId.length > 200) return new Response("bad thread", { status: 400 });
    if (!agents.has(threadId)) agents.set(threadId, runAgent({ endpoint, appKey, secret, threadId, model }));
    await agents.get(threadId);
    return new Response("{}", { headers: { "content-type": "application/json" } });
  }
  return new Response("not found", { status: 404 });
});

Deno.addSignalListener("SIGTERM", async () => {
  for (const stop of agents.values()) (await stop)();
  await server.shutdown();
  Deno.exit(0);
});
