// Pusher parity (issue 38, issue 34 points 4-7): cache channels on both protocols with the
// cache_miss webhook, user_authentication_timeout, disabled apps, sendToUser from the moment of
// signin_success, exact presence ids, and Pusher's answers to bad REST requests, observed with
// pusher-js, the `pusher` library and raw sockets.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { call, token } from "../pubsub/helpers.ts";
import { client, type Pusher, RawPusher, serverLib, subscribed, until } from "../pusher/helpers.ts";

/** One sample of a Prometheus text exposition (`series` with its labels), NaN when absent. */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
};

const sign = (secret: string, text: string) =>
  createHmac("sha256", secret).update(text).digest("hex");

/** A Pusher REST request signed over `body` (raw bytes allowed); `ts` as sent. */
async function signedRaw(
  port: number,
  path: string,
  body: Uint8Array | string,
  ts = String(Math.floor(Date.now() / 1000)),
) {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const params: Record<string, string> = {
    auth_key: "key1",
    auth_timestamp: ts,
    auth_version: "1.0",
  };
  if (bytes.length) params.body_md5 = createHash("md5").update(bytes).digest("hex");
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&");
  const sig = sign("secret1", ["POST", path, query].join("\n"));
  const res = await fetch(`http://127.0.0.1:${port}${path}?${query}&auth_signature=${sig}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  return {
    status: res.status,
    type: res.headers.get("content-type") ?? "",
    text: await res.text(),
  };
}

Deno.test("Pusher parity: cache channels, auth timeout, disabled apps, sign-in delivery, presence ids, REST details", async (t) => {
  const hooks = receiver();
  const apps = [
    {
      id: "app-1",
      key: "key1",
      secret: "secret1",
      webhooks: [{ url: hooks.url, event_types: ["cache_miss"] }],
    },
    { id: "app-t", key: "keyt", secret: "secrett", user_authentication_timeout: 1 },
    { id: "app-off", key: "keyoff", secret: "secretoff", enabled: false },
  ] as TestApp[];
  const server = await startInProcess({ apps });
  const lib = serverLib(server);
  const clients: Pusher[] = [];
  const raws: RawPusher[] = [];
  const open = (who = { user_id: "u1" }, app = apps[0]) => {
    const p = client(server, who, app);
    clients.push(p);
    return p;
  };
  const raw = async (key = "key1") => {
    const r = await RawPusher.connect(server, key);
    raws.push(r);
    return r;
  };
  /** Signs raw socket `r` of app-1 in as `id`; resolves on `pusher:signin_success`. */
  const signIn = async (r: RawPusher, id: string) => {
    r.send("pusher:signin", lib.authenticateUser(r.socketId, { id }));
    await r.waitFor((m) => m.event === "pusher:signin_success");
  };
  try {
    await t.step(
      "cache channel: pusher:cache_miss before any event, then the last event right after subscribing",
      async () => {
        const first = open();
        const misses: unknown[] = [];
        const ch = first.subscribe("cache-price");
        ch.bind("pusher:cache_miss", (d: unknown) => misses.push(d));
        await new Promise<void>((resolve) =>
          ch.bind("pusher:subscription_succeeded", () => resolve())
        );
        await until(() => misses.length === 1, 5000, "cache_miss");
        // pusher-js hands the bound callback no data: the message carries none.
        assert.deepEqual(misses, [undefined]);
        // One cache_miss webhook for the channel.
        const [hook] = await hooks.waitFor(1);
        const body = JSON.parse(hook.body);
        assert.deepEqual(
          body.events.map((e: { name: string; channel: string }) => [e.name, e.channel]),
          [["cache_miss", "cache-price"]],
        );

        await lib.trigger("cache-price", "tick", { v: 1 });
        await lib.trigger("cache-price", "tick", { v: 2 });
        // A raw subscriber sees subscription_succeeded, then the cached (last) event, in order.
        const r = await raw();
        r.send("pusher:subscribe", { channel: "cache-price" });
        const cached = await r.waitFor((m) => m.event === "tick");
        const names = r.messages.map((m) => m.event);
        assert.deepEqual(names.slice(names.indexOf("pusher_internal:subscription_succeeded")), [
          "pusher_internal:subscription_succeeded",
          "tick",
        ]);
        assert.deepEqual(JSON.parse(cached.data as string), { v: 2 });
        assert.equal(cached.channel, "cache-price");
        assert.equal(cached.serial, 2);
        // pusher-js gets it as the first event of the channel.
        const later = open();
        const got: unknown[] = [];
        later.subscribe("cache-price").bind("tick", (d: unknown) => got.push(d));
        await until(() => got.length === 1, 5000, "cached event");
        assert.deepEqual(got, [{ v: 2 }]);
        // The second miss within 5 s on the same channel sends no second webhook.
        const r2 = await raw();
        r2.send("pusher:subscribe", { channel: "cache-empty" });
        const miss = await r2.waitFor((m) =>
          m.event === "pusher:cache_miss" && m.channel === "cache-empty"
        );
        // As Pusher sends it: event and channel, no `data`.
        assert.deepEqual(miss, { event: "pusher:cache_miss", channel: "cache-empty" });
        const r3 = await raw();
        r3.send("pusher:subscribe", { channel: "cache-empty" });
        await r3.waitFor((m) => m.event === "pusher:cache_miss" && m.channel === "cache-empty");
        await hooks.waitFor(2);
        await new Promise((res) => setTimeout(res, 500));
        const missChannels = hooks.got.flatMap((h) =>
          JSON.parse(h.body).events.map((e: { channel: string }) => e.channel)
        );
        assert.deepEqual(missChannels, ["cache-price", "cache-empty"]);
      },
    );

    await t.step(
      "cache channels obey their base type's auth; private-cache and presence-cache replay too",
      async () => {
        const r = await raw();
        r.send("pusher:subscribe", { channel: "private-cache-doc" });
        const err = await r.waitFor((m) => m.event === "pusher:subscription_error");
        assert.equal(JSON.parse(err.data as string).status, 401);
        await lib.trigger("private-cache-doc", "state", { n: 7 });
        const p = open();
        const got: unknown[] = [];
        p.subscribe("private-cache-doc").bind("state", (d: unknown) => got.push(d));
        await until(() => got.length === 1, 5000, "private cached event");
        assert.deepEqual(got, [{ n: 7 }]);
        await lib.trigger("presence-cache-room", "state", { n: 8 });
        const q = open({ user_id: "pc" });
        const got2: unknown[] = [];
        q.subscribe("presence-cache-room").bind("state", (d: unknown) => got2.push(d));
        await until(() => got2.length === 1, 5000, "presence cached event");
        assert.deepEqual(got2, [{ n: 8 }]);
      },
    );

    await t.step(
      "Phoenix: the cached event in the join reply (cache: null on a miss)",
      async () => {
        const sock = await RawSocket.connect(server.wsUrl("key1"));
        try {
          const hit = await sock.join("pubsub:key1:cache-price", {});
          assert.equal(hit.status, "ok");
          assert.deepEqual(hit.response.cache, {
            event: "tick",
            payload: { serial: 2, data: { v: 2 } },
          });
          const miss = await sock.join("pubsub:key1:cache-nothing", {});
          assert.equal(miss.status, "ok");
          assert.equal(miss.response.cache, null);
          const plain = await sock.join("pubsub:key1:not-cached", {});
          assert.equal("cache" in plain.response, false);
        } finally {
          await sock.close();
        }
      },
    );

    await t.step(
      "user_authentication_timeout: an unauthorized socket is closed with 4009; a signed-in one stays",
      async () => {
        const idle = await raw("keyt");
        const signedIn = await raw("keyt");
        const userData = JSON.stringify({ id: "ok-user" });
        signedIn.send("pusher:signin", {
          auth: `keyt:${sign("secrett", `${signedIn.socketId}::user::${userData}`)}`,
          user_data: userData,
        });
        await signedIn.waitFor((m) => m.event === "pusher:signin_success");
        const closed = await idle.closed(8000);
        assert.equal(closed.code, 4009);
        const err = idle.messages.find((m) => m.event === "pusher:error") as {
          data: { code: number; message: string };
        };
        assert.equal(err.data.code, 4009);
        assert.match(err.data.message, /not authorized within 1 seconds/);
        await new Promise((res) => setTimeout(res, 300));
        assert.equal(signedIn.closeEvent, undefined);
      },
    );

    await t.step("enabled: false: Pusher 4003, Phoenix join refused, HTTP 403", async () => {
      const off = await raw("keyoff");
      const e = off.messages[0] as { event: string; data: { code: number; message: string } };
      assert.equal(e.event, "pusher:error");
      assert.equal(e.data.code, 4003);
      assert.equal((await off.closed()).code, 4003);
      const sock = await RawSocket.connect(server.wsUrl("keyoff"));
      try {
        const j = await sock.join("pubsub:keyoff:news", {});
        assert.deepEqual([j.status, j.response.reason], ["error", "app disabled"]);
      } finally {
        await sock.close();
      }
      const trig = await call(server, "POST", "/api/apps/app-off/trigger", {
        channel: "news",
        event: "e",
        data: {},
      }, apps[2]);
      assert.equal(trig.status, 403);
      assert.deepEqual(trig.body, {
        errors: [{ status: "403", title: "Forbidden", detail: "app disabled" }],
      });
      const offLib = serverLib(server, apps[2]);
      await assert.rejects(
        offLib.trigger("news", "e", {}),
        (err: { status: number; body: string }) =>
          err.status === 403 && err.body === "App is disabled",
      );
    });

    await t.step(
      "sendToUser reaches a socket from signin_success on, before any #server-to-user subscription",
      async () => {
        for (let i = 0; i < 5; i++) {
          const r = await raw();
          await signIn(r, `fast-${i}`);
          await lib.sendToUser(`fast-${i}`, "hello", { i });
          const got = await r.waitFor((m) => m.event === "hello");
          assert.equal(got.channel, `#server-to-user-fast-${i}`);
          assert.deepEqual(JSON.parse(got.data as string), { i });
          assert.equal(
            r.messages.some((m) => m.event === "pusher_internal:subscription_succeeded"),
            false,
          );
          // Subscribing and unsubscribing the user channel does not stop delivery while signed in.
          r.send("pusher:subscribe", { channel: `#server-to-user-fast-${i}` });
          await r.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
          r.send("pusher:unsubscribe", { channel: `#server-to-user-fast-${i}` });
          await lib.sendToUser(`fast-${i}`, "again", { i });
          await r.waitFor((m) => m.event === "again");
          assert.equal(r.messages.filter((m) => m.event === "hello").length, 1);
          await lib.terminateUserConnections(`fast-${i}`);
          assert.equal((await r.closed()).code, 4009);
        }
      },
    );

    await t.step("a closed signed-in socket is no longer among its user's receivers", async () => {
      const delivered = async () =>
        sample(
          await (await fetch(`${server.baseUrl}/metrics`)).text(),
          'switchboard_messages_delivered_total{product="pusher-user"}',
        );
      const r = await raw();
      await signIn(r, "gone");
      await lib.sendToUser("gone", "one", {});
      await r.waitFor((m) => m.event === "one");
      const before = await delivered();
      assert.ok(before >= 1, `delivered to users so far: ${before}`);
      await lib.terminateUserConnections("gone");
      assert.equal((await r.closed()).code, 4009);
      await lib.sendToUser("gone", "two", {});
      assert.equal(await delivered(), before);
    });

    await t.step("pusher-js: sendToUser sent on signin_success arrives, every time", async () => {
      for (let i = 0; i < 10; i++) {
        const id = `js-${i}`;
        const p = open({ user_id: id });
        const got: unknown[] = [];
        p.user.bind("note", (d: unknown) => got.push(d));
        const sent = new Promise<void>((resolve, reject) => {
          p.connection.bind("message", (m: { event: string }) => {
            if (m.event === "pusher:signin_success") {
              lib.sendToUser(id, "note", { i }).then(() => resolve(), reject);
            }
          });
        });
        p.signin();
        await sent;
        await until(() => got.length === 1, 5000, `sendToUser ${i}`);
        assert.deepEqual(got, [{ i }]);
        p.disconnect();
      }
    });

    await t.step(
      "presence user_id numbers past 2^53 are refused on both protocols; two users never merge",
      async () => {
        for (const id of ["9007199254740993", "1e400", "1.5"]) {
          const r = await raw();
          const channelData = `{"user_id":${id}}`;
          r.send("pusher:subscribe", {
            channel: "presence-big",
            auth: `key1:${sign("secret1", `${r.socketId}:presence-big:${channelData}`)}`,
            channel_data: channelData,
          });
          const err = await r.waitFor((m) => m.event === "pusher:subscription_error");
          const data = JSON.parse(err.data as string);
          assert.equal(data.status, 400);
          assert.match(data.error, /user_id is a number that is not a safe integer/);
        }
        const sock = await RawSocket.connect(server.wsUrl("key1"));
        try {
          const caps = ["channel:subscribe:presence-big", "channel:presence:presence-big"];
          const j = await sock.join("pubsub:key1:presence-big", {
            auth: await token(server, apps[0], sock.socketId, caps, "9007199254740992"),
            channel_data: { user_id: 9007199254740993 },
          });
          assert.equal(j.status, "error");
          assert.match(String(j.response.reason), /not a safe integer/);
        } finally {
          await sock.close();
        }
        // Exact digits as strings stay two members.
        for (const id of ["9007199254740993", "9007199254740992"]) {
          await subscribed(open({ user_id: id }), "presence-big");
        }
        const users = await (await lib.get({ path: "/channels/presence-big/users" })).json();
        assert.deepEqual(users.users.map((u: { id: string }) => u.id).sort(), [
          "9007199254740992",
          "9007199254740993",
        ]);
      },
    );

    await t.step(
      "pusher:subscribe with an epoch that is not a string gets a clear error",
      async () => {
        const r = await raw();
        r.send("pusher:subscribe", { channel: "news", epoch: 5, after_serial: 0 });
        const err = await r.waitFor((m) => m.event === "pusher:subscription_error");
        assert.match(JSON.parse(err.data as string).error, /^invalid epoch/);
      },
    );

    await t.step(
      "REST: non-UTF-8 body 400, 10 MB plain-text 413, bad batch items 400, hex auth_timestamp 401",
      async () => {
        const bad = new Uint8Array([0x7b, 0x22, 0x6e, 0xff, 0xfe, 0x22, 0x7d]);
        const r1 = await signedRaw(server.port, "/apps/app-1/events", bad);
        assert.deepEqual([r1.status, r1.text], [400, "Invalid body: not UTF-8 text"]);
        const big = await signedRaw(
          server.port,
          "/apps/app-1/events",
          "x".repeat(10 * 1024 * 1024),
        );
        assert.equal(big.status, 413);
        assert.match(big.type, /^text\/plain/);
        assert.match(big.text, /^Request body too large/);
        const batch = await signedRaw(
          server.port,
          "/apps/app-1/batch_events",
          JSON.stringify({ batch: [1, null, "x"] }),
        );
        assert.deepEqual([batch.status, batch.text], [
          400,
          "Invalid batch item 0: expected an object { channel, name, data }, got number",
        ]);
        const nul = await signedRaw(
          server.port,
          "/apps/app-1/batch_events",
          JSON.stringify({ batch: [{ channel: "a", name: "e", data: "{}" }, null] }),
        );
        assert.deepEqual([nul.status, nul.text], [
          400,
          "Invalid batch item 1: expected an object { channel, name, data }, got null",
        ]);
        const now = Math.floor(Date.now() / 1000);
        const hex = await signedRaw(
          server.port,
          "/apps/app-1/events",
          JSON.stringify({ name: "e", channel: "a", data: "{}" }),
          `0x${now.toString(16)}`,
        );
        assert.equal(hex.status, 401);
        assert.match(hex.text, /^Invalid auth_timestamp/);
        const ok = await signedRaw(
          server.port,
          "/apps/app-1/events",
          JSON.stringify({ name: "e", channel: "a", data: "{}" }),
        );
        assert.equal(ok.status, 200);
      },
    );
  } finally {
    for (const p of clients) p.disconnect();
    for (const r of raws) r.close();
    await hooks.close();
    await server.stop();
  }
});
