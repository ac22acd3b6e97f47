// GET /sdk/client.js (bundle, ETag, 304) and the playground's switch and backend routes.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { startInProcess } from "../helpers/in_process.ts";

const root = new URL("../../", import.meta.url).pathname;

/** Starts a server with the development app and reads its key and secret. */
async function startDevServer() {
  const server = await startInProcess({ apps: null });
  const { key, secret } = server.devApp!;
  return { server, key, secret };
}

Deno.test("GET /sdk/client.js serves the bundled SDK with a content ETag and answers 304", async () => {
  const server = await startInProcess();
  try {
    const res = await fetch(`${server.baseUrl}/sdk/client.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/javascript/);
    assert.match(res.headers.get("cache-control")!, /no-cache/);
    assert.equal(
      res.headers.get("access-control-allow-origin"),
      "*",
      "importable from another origin",
    );
    const body = await res.text();
    const etag = res.headers.get("etag")!;
    const digest = createHash("sha256").update(body).digest("base64url").slice(0, 27);
    assert.equal(etag, `"${digest}"`, "the ETag is the hash of the served content");
    // It is one self-contained ES module: it imports nothing else from the server.
    assert.doesNotMatch(body, /\bfrom\s*["'](?!data:)/);
    const mod = await import(
      `data:text/javascript;base64,${btoa(unescape(encodeURIComponent(body)))}`
    );
    if (existsSync(`${root}sdk/client/mod.ts`)) {
      assert.equal(typeof mod.RealtimeClient, "function", "exports RealtimeClient");
      assert.equal(typeof mod.ChatClient, "function", "exports ChatClient");
    }
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await fetch(`${server.baseUrl}/sdk/client.js`, {
        headers: { "if-none-match": header },
      });
      assert.equal(again.status, 304, header);
      assert.equal(await again.text(), "");
      assert.equal(again.headers.get("etag"), etag);
    }
    const stale = await fetch(`${server.baseUrl}/sdk/client.js`, {
      headers: { "if-none-match": '"old"' },
    });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();
  } finally {
    await server.stop();
  }
});

Deno.test("lib/generated/client_bundle.ts is up to date with sdk/client (deno task bundle)", async () => {
  const bun = `${root}node_modules/.bin/bun`;
  const out = await new Deno.Command(bun, {
    args: ["scripts/bundle_client.ts", "--check"],
    cwd: root,
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("the playground is served at / by default and turned off by --no-playground or PLAYGROUND=0", async () => {
  const on = await startInProcess();
  try {
    const page = await fetch(`${on.baseUrl}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="\/playground\/app.js">/);
    const js = await fetch(`${on.baseUrl}/playground/app.js`);
    assert.match(await js.text(), /from "\/sdk\/client.js"/);
  } finally {
    await on.stop();
  }
  for (const opts of [{ args: ["--no-playground"] }, { env: { PLAYGROUND: "0" } }]) {
    const off = await startInProcess(opts);
    try {
      for (const path of ["/", "/playground/app.js", "/playground/api/info"]) {
        const res = await fetch(`${off.baseUrl}${path}`);
        assert.equal(res.status, 404, `${path} with ${JSON.stringify(opts)}`);
        await res.body?.cancel();
      }
      const sdk = await fetch(`${off.baseUrl}/sdk/client.js`);
      assert.equal(sdk.status, 200, "the SDK is served without the playground");
      await sdk.body?.cancel();
    } finally {
      await off.stop();
    }
  }
});

Deno.test("playground API routes act only for the development app", async () => {
  const withFile = await startInProcess();
  try {
    const info = await (await fetch(`${withFile.baseUrl}/playground/api/info`)).json();
    assert.equal(info.app, null);
    assert.match(info.reason, /development app/);
    const res = await fetch(`${withFile.baseUrl}/playground/api/trigger`, {
      method: "POST",
      body: JSON.stringify({ channel: "c", event: "e", data: 1 }),
    });
    assert.equal(res.status, 403);
    await res.body?.cancel();
  } finally {
    await withFile.stop();
  }
  const { server: dev, key, secret } = await startDevServer();
  try {
    const infoRes = await fetch(`${dev.baseUrl}/playground/api/info`);
    const infoText = await infoRes.text();
    assert.equal(JSON.parse(infoText).app.key, key);
    assert.ok(!infoText.includes(secret), "the secret never reaches the browser");
    const auth = async (body: object) => {
      const res = await fetch(`${dev.baseUrl}/playground/api/auth`, {
        method: "POST",
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const json = await res.json();
      assert.ok(!JSON.stringify(json).includes(secret));
      const [appKey, payload] = json.auth.split(".");
      assert.equal(appKey, key);
      return {
        ...JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/"))),
        channel_data: json.channel_data,
      };
    };
    const obj = await auth({ socket_id: "s1", object_type: "counter", object_key: "demo" });
    assert.deepEqual(obj.capabilities, ["object:read:counter/demo"]);
    assert.equal(obj.socket_id, "s1");
    const chat = await auth({ socket_id: "s2", thread_id: "t1", client_id: "me" });
    assert.ok(chat.capabilities.includes("chat:subscribe:t1"));
    assert.equal(chat.client_id, "me");
    const presence = await auth({
      socket_id: "s3",
      channel_name: "presence-room",
      client_id: "ann",
    });
    assert.ok(presence.capabilities.includes("channel:presence:presence-room"));
    assert.deepEqual(JSON.parse(presence.channel_data), { user_id: "ann" });
    const bad = await fetch(`${dev.baseUrl}/playground/api/auth`, {
      method: "POST",
      body: JSON.stringify({ socket_id: "s" }),
    });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await dev.stop();
  }
});

/** Joins a thread as a user with the phoenix client; collects events; `send` pushes. */
async function userOnThread(baseUrl: string, appKey: string, threadId: string) {
  const { Socket } = await import("phoenix");
  const socket = new Socket(baseUrl.replace("http", "ws") + "/socket", {
    params: { app_key: appKey },
  });
  socket.connect();
  const events: { event: string; payload: any }[] = [];
  const channel = socket.channel(`chat:${appKey}:${threadId}`, { client_id: "tester" });
  channel.onMessage = (event: string, payload: any) => {
    if (!event.startsWith("phx_") && !event.startsWith("chan_reply")) {
      events.push({ event, payload });
    }
    return payload;
  };
  await new Promise((resolve, reject) =>
    channel.join().receive("ok", resolve).receive("error", reject)
  );
  const push = (event: string, payload: object) =>
    new Promise<any>((resolve, reject) =>
      channel.push(event, payload).receive("ok", resolve).receive(
        "error",
        (e: any) => reject(new Error(e.reason)),
      )
    );
  const waitFor = async (pred: (e: { event: string; payload: any }) => boolean, what: string) => {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const hit = events.find(pred);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`timed out waiting for ${what}; got ${events.map((e) => e.event).join(",")}`);
  };
  return { events, push, waitFor, close: () => socket.disconnect() };
}

Deno.test("the demo agent streams an answer, stops on cancel and asks for tool approval", async () => {
  const { server, key } = await startDevServer();
  const threadId = `pg-${crypto.randomUUID()}`;
  const user = await userOnThread(server.baseUrl, key, threadId);
  try {
    const started = await fetch(`${server.baseUrl}/playground/api/chat`, {
      method: "POST",
      body: JSON.stringify({ thread_id: threadId }),
    });
    assert.equal(started.status, 200, await started.clone().text());
    assert.equal((await started.json()).agent_id, "demo-agent");

    const first = await user.push("send", { text: "hello agent" });
    const end = await user.waitFor(
      (e) => e.event === "run:end" && e.payload.runId === first.runId,
      "run:end",
    );
    assert.equal(end.payload.reason, "complete");
    const streamed = user.events.filter((e) =>
      e.event === "stream" && e.payload.runId === first.runId
    );
    assert.ok(streamed.length >= 2, "the answer arrives in several roll-ups");
    assert.match(streamed.map((e) => e.payload.text).join(""), /hello agent/);

    const second = await user.push("send", { text: "tell me more" });
    await user.waitFor(
      (e) => e.event === "stream" && e.payload.runId === second.runId,
      "a streamed token",
    );
    await user.push("cancel", { runId: second.runId });
    const cancelled = await user.waitFor(
      (e) => e.event === "run:end" && e.payload.runId === second.runId,
      "run:end",
    );
    assert.equal(cancelled.payload.reason, "cancelled");

    const third = await user.push("send", { text: "what is the weather in Porto?" });
    const suspended = await user.waitFor(
      (e) => e.event === "run:suspend" && e.payload.runId === third.runId,
      "run:suspend",
    );
    assert.equal(suspended.payload.toolName, "get_weather");
    assert.deepEqual(suspended.payload.args, { city: "Porto" });
    await user.push("tool:approve", {
      runId: third.runId,
      toolCallId: suspended.payload.toolCallId,
    });
    await user.waitFor(
      (e) => e.event === "run:resume" && e.payload.runId === third.runId,
      "run:resume",
    );
    const done = await user.waitFor(
      (e) => e.event === "run:end" && e.payload.runId === third.runId,
      "run:end",
    );
    assert.equal(done.payload.reason, "complete");
    const text = user.events.filter((e) => e.event === "stream" && e.payload.runId === third.runId)
      .map((e) => e.payload.text).join("");
    assert.match(text, /Porto is sunny/);
  } finally {
    user.close();
    await server.stop();
  }
});
