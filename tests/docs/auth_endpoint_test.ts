// Runs docs/auth.md's "Your auth endpoint" block as written (its `@switchboard/server` import
// pointed at sdk/server/mod.ts, the package's source): served on a loopback port in front of a
// real server, with the official clients asking it for tokens. A signed-in user joins a private
// channel, a presence channel (as themselves), a Durable Object and a chat thread (the message
// is theirs), and pusher-js joins through the Pusher route; a stranger and another user's
// channel are refused.
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import process from "node:process";
import type { Context } from "hono";
import PusherJs from "pusher-js";
import { startInProcess } from "../helpers/in_process.ts";
import { RealtimeClient } from "../../sdk/client/realtime.ts";
import { ChatClient } from "../../sdk/client/chat_client.ts";

const root = new URL("../../", import.meta.url);
const MARK = "<!-- docs-check: tests/docs/auth_endpoint_test.ts runs this block -->";

/** The marked code block of docs/auth.md, its package import pointed at the SDK source. */
function snippet(): string {
  const doc = readFileSync(new URL("docs/auth.md", root), "utf8");
  const at = doc.indexOf(MARK);
  assert.ok(at > 0, "docs/auth.md has the marked auth endpoint block");
  const block = doc.slice(at).match(/```ts\n([\s\S]*?)\n```/);
  assert.ok(block, "a ts block follows the mark");
  assert.match(block[1], /from "@switchboard\/server"/, "the doc imports the package");
  return block[1].replace(
    `"@switchboard/server"`,
    JSON.stringify(new URL("sdk/server/mod.ts", root).href),
  );
}

/** Polls `ok` (10 s cap). */
async function until(ok: () => boolean, what: string) {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

Deno.test({
  name: "docs/auth.md: the auth endpoint issues working tokens",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startInProcess();
  // The snippet is a module inside the repository (git ignores tests/docs/*.tmp.ts), so "hono"
  // and "pusher" resolve from node_modules as they would in an app.
  const file =
    new URL(`auth_endpoint_${crypto.randomUUID().slice(0, 8)}.tmp.ts`, import.meta.url).pathname;
  writeFileSync(file, snippet());
  Object.assign(process.env, {
    SWITCHBOARD_URL: server.baseUrl,
    SWITCHBOARD_APP_ID: "app-1",
    SWITCHBOARD_APP_KEY: "key1",
    SWITCHBOARD_APP_SECRET: "secret1",
  });
  const clients: { disconnect(): void }[] = [];
  let endpoint: Deno.HttpServer<Deno.NetAddr> | undefined;
  try {
    // The block type-checks as an app's TypeScript would.
    const check = await new Deno.Command(Deno.execPath(), {
      args: ["check", file],
      cwd: root.pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(check.code, 0, new TextDecoder().decode(check.stderr));
    const mod = await import(file);
    // The app's session: here a header names the user; no header is a stranger.
    const users: Record<string, { id: string; name: string }> = {
      alice: { id: "alice", name: "Alice" },
    };
    const currentUser = (c: Context) =>
      Promise.resolve(users[c.req.header("x-user") ?? ""] ?? null);
    const app = mod.authRoutes(currentUser);
    endpoint = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.fetch);
    const base = `http://127.0.0.1:${endpoint.addr.port}`;
    const ws = server.baseUrl.replace("http", "ws") + "/socket";

    const realtime = (user?: string) => {
      const c = new RealtimeClient("key1", {
        endpoint: ws,
        authEndpoint: `${base}/realtime-auth`,
        authHeaders: user ? { "x-user": user } : {},
      });
      clients.push(c);
      return c;
    };
    const alice = realtime("alice");
    await alice.subscribe("private-user-alice").ready;
    const room = alice.subscribe("presence-room");
    await room.ready;
    assert.deepEqual([...room.members.entries()], [["alice", { name: "Alice" }]]);
    await assert.rejects(
      alice.subscribe("private-user-bob").ready,
      "another user's channel is refused",
    );
    await assert.rejects(realtime().subscribe("private-news").ready, "a stranger gets no token");

    const put = await fetch(`${server.baseUrl}/api/v1/objects/app-1/doc/1/title`, {
      method: "PUT",
      headers: server.headers(),
      body: JSON.stringify({ value: "hello" }),
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    const doc = alice.object("doc", "1");
    await doc.whenSynced();
    assert.deepEqual(doc.state, { title: "hello" });
    doc.close();

    const chat = new ChatClient("key1", {
      endpoint: ws,
      authEndpoint: `${base}/chat-auth`,
      authHeaders: { "x-user": "alice" },
    });
    clients.push(chat);
    const session = await chat.connect("support-1", { clientId: "alice" });
    await session.view.send("hello from alice");
    const rest = await fetch(`${server.baseUrl}/api/chat/threads/support-1/messages`, {
      headers: server.headers(),
    });
    const stored = JSON.stringify(await rest.json());
    assert.match(stored, /hello from alice/);
    assert.match(stored, /"alice"/);
    const strangerChat = new ChatClient("key1", {
      endpoint: ws,
      authEndpoint: `${base}/chat-auth`,
    });
    clients.push(strangerChat);
    await assert.rejects(strangerChat.connect("support-1", { clientId: "alice" }), /401/);

    // pusher-js posts a form body to the Pusher route (here through its custom handler, so the
    // test can add the session header).
    // deno-lint-ignore no-explicit-any
    const pusher = new (PusherJs as any)("key1", {
      wsHost: "127.0.0.1",
      wsPort: server.port,
      forceTLS: false,
      enabledTransports: ["ws"],
      cluster: "",
      channelAuthorization: {
        customHandler: (
          p: { socketId: string; channelName: string },
          cb: (e: Error | null, d: unknown) => void,
        ) =>
          void fetch(`${base}/pusher/auth`, {
            method: "POST",
            headers: { "x-user": "alice", "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ socket_id: p.socketId, channel_name: p.channelName }),
          }).then((r) => r.json()).then((d) => cb(null, d), (e) => cb(e, null)),
      },
    });
    clients.push(pusher);
    const ch = pusher.subscribe("presence-room");
    let me: { id: string; info: unknown } | undefined;
    ch.bind(
      "pusher:subscription_succeeded",
      (members: { me: { id: string; info: unknown } }) => (me = members.me),
    );
    await until(() => me !== undefined, "pusher-js presence subscription");
    assert.deepEqual(me, { id: "alice", info: { name: "Alice" } });
    await until(
      () => room.members.size === 1 && room.members.has("alice"),
      "one user on two sockets counted once",
    );
  } finally {
    for (const c of clients) c.disconnect();
    await endpoint?.shutdown();
    rmSync(file, { force: true });
    await server.stop();
  }
});
