// GET /sdk/client.js (bundle, ETag, 304) and the playground's switch and backend routes.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { startServer } from "../helpers/server.ts";

const root = new URL("../../", import.meta.url).pathname;

Deno.test("GET /sdk/client.js serves the bundled SDK with a content ETag and answers 304", async () => {
  const server = await startServer();
  try {
    const res = await fetch(`${server.baseUrl}/sdk/client.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/javascript/);
    assert.match(res.headers.get("cache-control")!, /no-cache/);
    const body = await res.text();
    const etag = res.headers.get("etag")!;
    const digest = createHash("sha256").update(body).digest("base64url").slice(0, 27);
    assert.equal(etag, `"${digest}"`, "the ETag is the hash of the served content");
    // It is one self-contained ES module: it imports nothing else from the server.
    assert.doesNotMatch(body, /\bfrom\s*["'](?!data:)/);
    const mod = await import(`data:text/javascript;base64,${btoa(unescape(encodeURIComponent(body)))}`);
    if (existsSync(`${root}sdk/client/mod.ts`)) {
      assert.equal(typeof mod.RealtimeClient, "function", "exports RealtimeClient");
      assert.equal(typeof mod.ChatClient, "function", "exports ChatClient");
    }
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await fetch(`${server.baseUrl}/sdk/client.js`, { headers: { "if-none-match": header } });
      assert.equal(again.status, 304, header);
      assert.equal(await again.text(), "");
      assert.equal(again.headers.get("etag"), etag);
    }
    const stale = await fetch(`${server.baseUrl}/sdk/client.js`, { headers: { "if-none-match": '"old"' } });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();
  } finally {
    await server.stop();
  }
});

Deno.test("lib/generated/client_bundle.ts is up to date with sdk/client (deno task bundle)", async () => {
  const bun = `${root}node_modules/.bin/bun`;
  const out = await new Deno.Command(bun, { args: ["scripts/bundle_client.ts", "--check"], cwd: root }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("the playground is served at / by default and turned off by --no-playground or PLAYGROUND=0", async () => {
  const on = await startServer();
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
    const off = await startServer(opts);
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
  const withFile = await startServer();
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
  const dev = await startServer({ apps: null });
  try {
    const key = dev.output().match(/app key:\s+(\S+)/)![1];
    const secret = dev.output().match(/app secret:\s+(\S+)/)![1];
    const infoRes = await fetch(`${dev.baseUrl}/playground/api/info`);
    const infoText = await infoRes.text();
    assert.equal(JSON.parse(infoText).app.key, key);
    assert.ok(!infoText.includes(secret), "the secret never reaches the browser");
    const auth = async (body: object) => {
      const res = await fetch(`${dev.baseUrl}/playground/api/auth`, { method: "POST", body: JSON.stringify(body) });
      assert.equal(res.status, 200);
      const json = await res.json();
      assert.ok(!JSON.stringify(json).includes(secret));
      const [appKey, payload] = json.auth.split(".");
      assert.equal(appKey, key);
      return { ...JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/"))), channel_data: json.channel_data };
    };
    const obj = await auth({ socket_id: "s1", object_type: "counter", object_key: "demo" });
    assert.deepEqual(obj.capabilities, ["object:read:counter/demo"]);
    assert.equal(obj.socket_id, "s1");
    const chat = await auth({ socket_id: "s2", thread_id: "t1", client_id: "me" });
    assert.ok(chat.capabilities.includes("chat:subscribe:t1"));
    assert.equal(chat.client_id, "me");
    const presence = await auth({ socket_id: "s3", channel_name: "presence-room", client_id: "ann" });
    assert.ok(presence.capabilities.includes("channel:presence:presence-room"));
    assert.deepEqual(JSON.parse(presence.channel_data), { user_id: "ann" });
    const bad = await fetch(`${dev.baseUrl}/playground/api/auth`, { method: "POST", body: JSON.stringify({ socket_id: "s" }) });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await dev.stop();
  }
});
