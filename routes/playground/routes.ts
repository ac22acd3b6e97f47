/**
 * The playground's backend: the page at `GET /`, its script, and `/playground/api/*`, which act
 * with the DEVELOPMENT app only. The app secret never leaves the server: the browser asks these
 * routes to trigger events, write objects, mint socket-bound tokens and start the demo agent.
 */
import { type Context, Hono } from "hono";
import type { ProductDeps } from "../../lib/product.ts";
import type { App } from "../../lib/config/apps.ts";
import type { Config } from "../../lib/config/config.ts";
import { CHAT_CLIENT_VERBS, mintFastToken } from "../../lib/auth/mod.ts";
import { ApiError, readJsonBody } from "../../lib/http/errors.ts";
import type { DemoAgents } from "../../lib/playground/demo_agent.ts";
import { PLAYGROUND_HTML } from "./page_html.ts";
import { PLAYGROUND_JS } from "./page_script.ts";
import { streamSSE } from "hono/streaming";
import { type TapEntry, watchApp } from "../../lib/debug/tap.ts";

/** Most console entries held while the stream writes (the oldest go first). */
const DEBUG_QUEUE = 1000;

type Body = Record<string, unknown>;

/** Routes of the playground; every API route answers 403 when no development app exists. */
export function playgroundRoutes(deps: ProductDeps, agents: DemoAgents): Hono {
  const devApp = deps.config.appsFile ? undefined : deps.apps.all()[0];
  const routes = new Hono();
  const noStore = { "cache-control": "no-cache" };
  routes.get("/", (c) => c.html(PLAYGROUND_HTML, 200, noStore));
  routes.get(
    "/playground/app.js",
    (c) =>
      c.body(PLAYGROUND_JS, 200, { ...noStore, "content-type": "text/javascript; charset=utf-8" }),
  );
  routes.get(
    "/playground/api/info",
    (c) =>
      c.json(
        devApp ? { app: { id: devApp.id, key: devApp.key } } : {
          app: null,
          reason:
            "The playground works with the development app only: start without --apps / APPS_FILE.",
        },
      ),
  );

  routes.use("/playground/api/*", async (_c, next) => {
    if (!devApp) throw new ApiError(403, "the playground needs the development app");
    await next();
  });

  // The live debug console: the development app's tap as server-sent events. Entries queue
  // while the stream writes; past DEBUG_QUEUE the oldest are dropped (and counted).
  routes.get("/playground/api/debug", (c) =>
    streamSSE(c, async (stream) => {
      const queue: TapEntry[] = [];
      let dropped = 0;
      let wake: (() => void) | undefined;
      let open = true;
      const stop = watchApp(devApp!.key, (entry) => {
        if (entry.kind !== "event" && entry.kind !== "join" && entry.kind !== "api") return; // what this page shows
        queue.push(entry);
        if (queue.length > DEBUG_QUEUE) {
          queue.shift();
          dropped++;
        }
        wake?.();
      });
      stream.onAbort(() => {
        open = false;
        stop();
        wake?.();
      });
      await stream.writeSSE({ event: "ready", data: "{}" });
      while (open) {
        while (queue.length && open) {
          const e = queue.shift()!;
          const payload = e.payload === undefined
            ? undefined
            : JSON.stringify(e.payload).slice(0, 300);
          await stream.writeSSE({ data: JSON.stringify({ ...e, payload, dropped }) });
        }
        if (open) await new Promise<void>((r) => (wake = r));
      }
      stop();
    }));

  // The SDK's authEndpoint contract: channel, object or chat body, answered with `{ auth }`.
  routes.post("/playground/api/auth", async (c) => {
    const body = await objectBody(c);
    if (!body) throw badRequest();
    const socketId = str(body.socket_id);
    if (!socketId) throw badRequest("socket_id is required");
    const caps = capabilitiesFor(body);
    if (!caps) throw badRequest("expected channel_name, object_type + object_key, or thread_id");
    // A presence token is bound to the member's user id (the server checks it against
    // channel_data), so it carries that id as its client id.
    const clientId = caps.clientId ?? str(body.client_id);
    const auth = await mintFastToken(devApp!, socketId, caps.list, clientId);
    return c.json(caps.channelData ? { auth, channel_data: caps.channelData } : { auth });
  });

  routes.post("/playground/api/trigger", async (c) => {
    const body = await objectBody(c);
    if (!body || !str(body.channel) || !str(body.event)) {
      throw badRequest("channel and event are required");
    }
    const { channel, event, data } = body;
    return forward(deps.config, devApp!, "POST", `/api/apps/${devApp!.id}/trigger`, {
      channel,
      event,
      data: data ?? null,
    });
  });

  routes.post("/playground/api/object", async (c) => {
    const body = await objectBody(c);
    const type = str(body?.type), key = str(body?.key), slot = str(body?.slot);
    if (!body || !type || !key || !slot) throw badRequest("type, key and slot are required");
    const base = `/api/v1/objects/${devApp!.id}/${encodeURIComponent(type)}/${
      encodeURIComponent(key)
    }`;
    const at = `${base}/${encodeURIComponent(slot)}`;
    if (body.op === "set") {
      return forward(deps.config, devApp!, "PUT", at, { value: body.value ?? null });
    }
    if (body.op === "delete") return forward(deps.config, devApp!, "DELETE", at);
    if (body.op === "increment") {
      return forward(deps.config, devApp!, "POST", `${base}/increment`, { slot, by: body.by ?? 1 });
    }
    throw badRequest("op must be set, increment or delete");
  });

  // Makes sure the built-in demo agent has joined the thread before the browser sends to it.
  routes.post("/playground/api/chat", async (c) => {
    const body = await objectBody(c);
    const threadId = str(body?.thread_id);
    if (!threadId) throw badRequest("thread_id is required");
    try {
      await agents.ensure(threadId, {
        endpoint: `${loopbackBase(deps.config).replace(/^http/, "ws")}/socket`,
        appKey: devApp!.key,
        appSecret: devApp!.secret,
      });
    } catch (err) {
      throw new ApiError(503, `demo agent could not join: ${(err as Error).message}`);
    }
    return c.json({ thread_id: threadId, agent_id: agents.agentId });
  });
  return routes;
}

/** Capabilities for one auth request body (and presence channel_data). */
function capabilitiesFor(
  body: Body,
): { list: string[]; channelData?: string; clientId?: string } | undefined {
  const channel = str(body.channel_name);
  if (channel) {
    const list = [`channel:subscribe:${channel}`, `channel:publish:${channel}`];
    if (!channel.startsWith("presence-")) return { list };
    list.push(`channel:presence:${channel}`);
    const userId = str(body.client_id) ?? `visitor-${String(body.socket_id).slice(-6)}`;
    return { list, channelData: JSON.stringify({ user_id: userId }), clientId: userId };
  }
  const type = str(body.object_type), key = str(body.object_key);
  if (type && key) return { list: [`object:read:${type}/${key}`] };
  const thread = str(body.thread_id);
  if (thread) return { list: CHAT_CLIENT_VERBS.map((v: string) => `chat:${v}:${thread}`) };
  return undefined;
}

/**
 * This server's own base URL for loopback calls. `config.port` holds the listening port (the
 * server fills it in after listening, so `--port 0` works behind any proxy).
 */
export function loopbackBase(config: Config): string {
  const port = config.port;
  const wildcard = ["0.0.0.0", "::", "", "[::]"].includes(config.host);
  const host = wildcard
    ? "127.0.0.1"
    : config.host.includes(":")
    ? `[${config.host}]`
    : config.host;
  return `http://${host}:${port}`;
}

/** Calls this server's own HTTP API with the dev app's credentials; relays status and body. */
async function forward(config: Config, app: App, method: string, path: string, body?: unknown) {
  const res = await fetch(loopbackBase(config) + path, {
    method,
    headers: {
      "x-app-key": app.key,
      "x-app-secret": app.secret,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return new Response(text || null, {
    status: res.status,
    headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
  });
}

async function objectBody(c: Context): Promise<Body | undefined> {
  const read = await readJsonBody(c);
  if (!read.ok || typeof read.body !== "object" || read.body === null || Array.isArray(read.body)) {
    return undefined;
  }
  return read.body as Body;
}

function badRequest(detail = "request body must be a JSON object"): ApiError {
  return new ApiError(400, detail);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}
