import assert from "node:assert/strict";
import { Hono } from "hono";
import { type App, AppRegistry } from "../../lib/config/apps.ts";
import { base64urlDecodeText } from "../../lib/auth/base64url.ts";
import { mintFastToken } from "../../lib/auth/fast_token.ts";
import { verifyToken } from "../../lib/auth/verify.ts";
import { authRoutes } from "../../routes/auth.ts";
import { Switchboard, SwitchboardError } from "../../sdk/server/mod.ts";

const app: App = {
  id: "id-1",
  key: "key-1",
  secret: "secret-1",
  enable_user_authentication: 0,
  enable_client_messages: true,
  max_client_events_per_sec: 100,
  max_backend_events_per_sec: 10_000,
};
const offline = new Switchboard({
  baseUrl: "http://127.0.0.1:1/",
  appKey: app.key,
  appSecret: app.secret,
});

/** The capability list and client id inside a fast-path token. */
function payload(token: string): { capabilities: string[]; client_id?: string; socket_id: string } {
  return JSON.parse(base64urlDecodeText(token.split(".")[1])!);
}

async function caps(token: string, socketId = "s1"): Promise<string[]> {
  const p = await verifyToken(app, token, socketId);
  assert.ok(p, "token should verify");
  return p.capabilities;
}

const CLIENT_SET = (t: string) => [
  `chat:subscribe:${t}`,
  `chat:publish:user_message:${t}`,
  `chat:cancel_own:${t}`,
  `chat:tool_approval:${t}`,
];

Deno.test("`new Switchboard()` validates options and defaults appId to the key", () => {
  assert.equal(offline.appId, app.key);
  assert.equal(offline.baseUrl, "http://127.0.0.1:1");
  const withId = new Switchboard({
    baseUrl: "http://x",
    appId: "id-1",
    appKey: "k",
    appSecret: "s",
  });
  assert.equal(withId.appId, "id-1");
  assert.throws(() => new Switchboard({ baseUrl: "", appKey: "k", appSecret: "s" }), /baseUrl/);
  assert.throws(
    () => new Switchboard({ baseUrl: "http://x", appKey: "k", appSecret: "" }),
    /appSecret/,
  );
});

Deno.test("`Switchboard.mintFastToken()` equals the library minting", async () => {
  const t = await offline.mintFastToken("s1", ["channel:subscribe:a"], "u1");
  assert.equal(t, await mintFastToken(app, "s1", ["channel:subscribe:a"], "u1"));
  await assert.rejects(() => offline.mintFastToken("s1", []), /empty/);
});

Deno.test("`Switchboard.authenticate()` grants subscribe on a private channel", async () => {
  const res = await offline.authenticate("s1", "private-room", { user_id: 1 });
  assert.deepEqual(Object.keys(res), ["auth"]);
  assert.deepEqual(await caps(res.auth), ["channel:subscribe:private-room"]);
  assert.equal(payload(res.auth).client_id, undefined);
});

Deno.test("`Switchboard.authenticate()` on presence adds the presence cap, channel_data and client id", async () => {
  const user = { user_id: 42, user_info: { name: "Ada" } };
  const res = await offline.authenticate("s1", "presence-lobby", user);
  assert.deepEqual(await caps(res.auth), [
    "channel:subscribe:presence-lobby",
    "channel:presence:presence-lobby",
  ]);
  assert.equal(res.channel_data, JSON.stringify(user));
  assert.equal((await verifyToken(app, res.auth, "s1"))?.clientId, "42");
});

Deno.test("`Switchboard.authenticate()` throws for public names, presence without user_id and wildcards", async () => {
  await assert.rejects(() => offline.authenticate("s1", "news"), /private- and presence-/);
  await assert.rejects(() => offline.authenticate("s1", "ephemeral-x"), /private- and presence-/);
  await assert.rejects(() => offline.authenticate("s1", "presence-lobby"), /user_id/);
  await assert.rejects(
    () => offline.authenticate("s1", "presence-lobby", { name: "x" }),
    /user_id/,
  );
  await assert.rejects(() => offline.authenticate("s1", "private-a/*"), /wildcard/);
  await assert.rejects(() => offline.authenticate("s1", ""), /channelName/);
});

Deno.test("`Switchboard.authenticateObject()` grants object:read on one object", async () => {
  const res = await offline.authenticateObject("s1", "order", "42");
  assert.deepEqual(await caps(res.auth), ["object:read:order/42"]);
  await assert.rejects(() => offline.authenticateObject("s1", "order", "*"), /wildcard/);
  await assert.rejects(() => offline.authenticateObject("s1", "", "1"), /type/);
  await assert.rejects(() => offline.authenticateObject("s1", "a:b", "1"), /must not contain/);
});

Deno.test("`Switchboard.authorize()` expands every grant kind, de-duplicated, in order", async () => {
  const res = await offline.authorize("s1", {
    channels: ["private-a", "news"],
    presence: ["presence-p", "private-a"],
    publish: ["news"],
    objects: [{ type: "order", key: "1" }, { type: "cart", key: "*" }],
    threads: ["t1"],
    capabilities: ["channel:subscribe:news", "chat:publish:token:t1"],
  }, "u1");
  assert.deepEqual(await caps(res.auth), [
    "channel:subscribe:private-a",
    "channel:subscribe:news",
    "channel:subscribe:presence-p",
    "channel:presence:presence-p",
    "channel:presence:private-a",
    "channel:publish:news",
    "object:read:order/1",
    "object:read:cart/*",
    ...CLIENT_SET("t1"),
    "chat:publish:token:t1",
  ]);
  assert.equal(payload(res.auth).client_id, "u1");
});

Deno.test("`Switchboard.authorize()` throws for empty grants or a malformed entry", async () => {
  await assert.rejects(() => offline.authorize("s1", {}), /empty/);
  await assert.rejects(
    () => offline.authorize("s1", { capabilities: ["nope"] }),
    /"nope" is malformed/,
  );
  await assert.rejects(() => offline.authorize("s1", { channels: ["a*b"] }), /malformed/);
});

Deno.test("`Switchboard` issues JWTs through a real server", async (t) => {
  const registry = new AppRegistry([app]);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    new Hono().route("/", authRoutes(registry)).fetch,
  );
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const sb = new Switchboard({ baseUrl, appId: app.id, appKey: app.key, appSecret: app.secret });
  try {
    await t.step("`authenticateChat()` without verbs grants the default client set", async () => {
      const { auth } = await sb.authenticateChat("s1", "t1", "u1");
      const p = await verifyToken(app, auth, "s1");
      assert.deepEqual(p?.capabilities, CLIENT_SET("t1"));
      assert.equal(p?.clientId, "u1");
      const claims = JSON.parse(base64urlDecodeText(auth.split(".")[1])!);
      assert.equal(claims.exp - claims.iat, 300);
      assert.equal(typeof claims.jti, "string");
    });
    await t.step("`authenticateChat()` accepts short and fully qualified verbs", async () => {
      const { auth } = await sb.authenticateChat("s1", "t1", "u1", [
        "subscribe",
        "publish:user_message",
        "chat:subscribe:t2",
      ]);
      assert.deepEqual(await caps(auth), [
        "chat:subscribe:t1",
        "chat:publish:user_message:t1",
        "chat:subscribe:t2",
      ]);
      const observer = await sb.authenticateChat("s1", "t1", "u1", ["subscribe"]);
      assert.deepEqual(await caps(observer.auth), ["chat:subscribe:t1"]);
    });
    await t.step(
      "`authenticateChat()` throws for unknown verbs, empty verbs and wildcards",
      async () => {
        await assert.rejects(
          () => sb.authenticateChat("s1", "t1", "u1", ["fly"]),
          /Unknown chat verb "fly"/,
        );
        await assert.rejects(() => sb.authenticateChat("s1", "t1", "u1", []), /non-empty/);
        await assert.rejects(() => sb.authenticateChat("s1", "*", "u1"), /wildcard/);
      },
    );
    await t.step("`issueToken()` issues a JWT for arbitrary grants", async () => {
      const { auth } = await sb.issueToken("s1", "u1", {
        channels: ["private-a"],
        objects: [{ type: "order", key: "1" }],
        threads: ["t9"],
      });
      assert.deepEqual(await caps(auth), [
        "channel:subscribe:private-a",
        "object:read:order/1",
        ...CLIENT_SET("t9"),
      ]);
      assert.equal(await verifyToken(app, auth, "s2"), null);
    });
    await t.step("a wrong secret surfaces as SwitchboardError 401", async () => {
      const bad = new Switchboard({ baseUrl, appKey: app.key, appSecret: "wrong" });
      const err = await bad.authenticateChat("s1", "t1", "u1").catch((e) => e);
      assert.ok(err instanceof SwitchboardError);
      assert.equal(err.status, 401);
      assert.deepEqual(err.body, { errors: [{ status: "401", title: "Unauthorized" }] });
      assert.match(err.message, /401/);
    });
    await t.step("an issuer 422 surfaces as SwitchboardError with the detail", async () => {
      class Raw extends Switchboard {
        post(body: unknown) {
          return this.request("POST", "/api/auth", body);
        }
      }
      const raw = new Raw({ baseUrl, appKey: app.key, appSecret: app.secret });
      const err = await raw.post({ socket_id: "s1", capabilities: ["chat:subscribe:t1"] }).catch((
        e,
      ) => e);
      assert.ok(err instanceof SwitchboardError);
      assert.equal(err.status, 422);
      assert.match(err.message, /client_id is required/);
    });
  } finally {
    await server.shutdown();
  }
});
