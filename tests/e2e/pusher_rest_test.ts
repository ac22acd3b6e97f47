// The Pusher REST API with the official `pusher` server library (unmodified), observed by
// pusher-js and Phoenix subscribers of the same channels, plus raw requests for the
// authentication failures and limits the library does not let one send.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { call, token } from "../pubsub/helpers.ts";
import {
  client,
  collect,
  type Pusher,
  RawPusher,
  serverLib,
  subscribed,
  until,
} from "../pusher/helpers.ts";

const APP: TestApp = { id: "app-1", key: "key1", secret: "secret1" };

/** A request signed like the Pusher libraries sign it; `tamper` changes it after signing. */
async function signed(
  port: number,
  method: string,
  path: string,
  body = "",
  opts: { secret?: string; ts?: number; md5?: string; query?: Record<string, string> } = {},
) {
  const params: Record<string, string> = {
    auth_key: "key1",
    auth_timestamp: String(opts.ts ?? Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
    ...opts.query,
  };
  if (body) params.body_md5 = opts.md5 ?? createHash("md5").update(body).digest("hex");
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&");
  const sig = createHmac("sha256", opts.secret ?? "secret1").update(
    [method, path, query].join("\n"),
  ).digest("hex");
  const res = await fetch(`http://127.0.0.1:${port}${path}?${query}&auth_signature=${sig}`, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body || undefined,
  });
  return { status: res.status, text: await res.text() };
}

Deno.test("Pusher REST API: events, batches, channel info, users, terminate; one channel for both protocols", async (t) => {
  const server = await startInProcess({ apps: [APP] });
  const lib = serverLib(server);
  const clients: Pusher[] = [];
  const open = (who = { user_id: "u1" }) => {
    const p = client(server, who);
    clients.push(p);
    return p;
  };
  const phoenix = await RawSocket.connect(server.wsUrl("key1"));
  const phoenixJoinPrivate = async (name: string) => {
    const tok = await token(server, APP, phoenix.socketId, [`channel:subscribe:${name}`]);
    assert.equal((await phoenix.join(`pubsub:key1:${name}`, { auth: tok })).status, "ok");
  };
  try {
    await t.step(
      "trigger reaches pusher-js and Phoenix subscribers with the same serials; data keeps its structure",
      async () => {
        const p = open();
        const ch = await subscribed(p, "news");
        const got = collect(ch, "hello");
        await phoenix.join("pubsub:key1:news", {});
        const res = await lib.trigger("news", "hello", { text: "hi" });
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), {});
        await lib.trigger("news", "hello", "plain");
        await until(() => got.length === 2);
        assert.deepEqual(got, [{ text: "hi" }, "plain"]);
        const frames = await until(() =>
          phoenix.frames.filter((f) => f[3] === "hello").length === 2
        )
          .then(() => phoenix.frames.filter((f) => f[3] === "hello"));
        assert.deepEqual(frames.map((f) => f[4]), [{ serial: 1, data: { text: "hi" } }, {
          serial: 2,
          data: "plain",
        }]);
        // Switchboard's own trigger on the same channel continues the same serials.
        assert.deepEqual(
          (await call(server, "POST", "/api/apps/app-1/trigger", {
            channel: "news",
            event: "hello",
            data: 3,
          })).body,
          { serial: 3 },
        );
        await until(() => got.length === 3);
      },
    );

    await t.step("trigger to several channels, socket_id exclusion and info", async () => {
      const a = open();
      const b = open();
      const chA = await subscribed(a, "presence-multi");
      const chB = await subscribed(b, "presence-multi");
      const gotA = collect(chA, "ev");
      const gotB = collect(chB, "ev");
      const res = await lib.trigger(["presence-multi", "other"], "ev", { n: 1 }, {
        socket_id: a.connection.socket_id,
        info: "user_count,subscription_count",
      });
      assert.deepEqual(await res.json(), {
        channels: {
          "presence-multi": { user_count: 1, subscription_count: 2 },
          other: { subscription_count: 0 },
        },
      });
      await until(() => gotB.length === 1);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(gotA, [], "the excluded socket does not get the event");
    });

    await t.step(
      "triggerBatch publishes all; more than 10 is refused with nothing published",
      async () => {
        const p = open();
        const ch = await subscribed(p, "batch");
        const got = collect(ch, "b");
        const res = await lib.triggerBatch(
          [1, 2, 3].map((i) => ({ channel: "batch", name: "b", data: { i } })),
        );
        assert.deepEqual(await res.json(), {});
        await until(() => got.length === 3);
        assert.deepEqual(got, [{ i: 1 }, { i: 2 }, { i: 3 }]);
        const eleven = Array.from(
          { length: 11 },
          (_, i) => ({ channel: "batch", name: "b", data: { i } }),
        );
        await assert.rejects(lib.triggerBatch(eleven), (e: { status: number }) => e.status === 400);
        const bad = [{ channel: "batch", name: "b", data: "1" }, {
          channel: "bad name!",
          name: "b",
          data: "2",
        }];
        await assert.rejects(lib.triggerBatch(bad), (e: { status: number }) => e.status === 400);
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(got.length, 3, "a refused batch publishes nothing");
      },
    );

    await t.step("channels, channel info and presence users", async () => {
      const p = open({ user_id: "alice" });
      await subscribed(p, "presence-lobby");
      const tok = await token(server, APP, phoenix.socketId, [
        "channel:subscribe:presence-lobby",
        "channel:presence:presence-lobby",
      ], "bob");
      assert.equal(
        (await phoenix.join("pubsub:key1:presence-lobby", {
          auth: tok,
          channel_data: { user_id: "bob" },
        })).status,
        "ok",
      );
      const list = await (await lib.get({
        path: "/channels",
        params: { filter_by_prefix: "presence-lobby", info: "user_count" },
      })).json();
      assert.deepEqual(list, { channels: { "presence-lobby": { user_count: 2 } } });
      const all = await (await lib.get({ path: "/channels" })).json();
      assert.ok("news" in all.channels && "presence-lobby" in all.channels);
      const one = await (await lib.get({
        path: "/channels/presence-lobby",
        params: { info: "user_count,subscription_count" },
      })).json();
      assert.deepEqual(one, { occupied: true, subscription_count: 2, user_count: 2, serial: 0 });
      const empty = await (await lib.get({ path: "/channels/nobody" })).json();
      assert.deepEqual(empty, { occupied: false, serial: 0 });
      const users = await (await lib.get({ path: "/channels/presence-lobby/users" })).json();
      assert.deepEqual(users.users.map((u: { id: string }) => u.id).sort(), ["alice", "bob"]);
      await assert.rejects(
        lib.get({ path: "/channels/news/users" }),
        (e: { status: number }) => e.status === 400,
      );
      await assert.rejects(
        lib.get({ path: "/channels", params: { info: "user_count" } }),
        (e: { status: number }) => e.status === 400,
      );
    });

    await t.step(
      "sendToUser reaches the signed-in user's sockets; terminateUserConnections closes them with 4009",
      async () => {
        const p = open({ user_id: "carol" });
        p.signin();
        const got: unknown[] = [];
        p.user.bind("note", (d: unknown) => got.push(d));
        await until(() => p.user.serverToUserChannel?.subscribed === true, 5000, "user channel");
        await lib.sendToUser("carol", "note", { hi: 1 });
        await until(() => got.length === 1);
        assert.deepEqual(got, [{ hi: 1 }]);
        const raw = await RawPusher.connect(server, "key1");
        const userData = JSON.stringify({ id: "carol" });
        const auth = lib.authenticateUser(raw.socketId, { id: "carol" });
        raw.send("pusher:signin", { auth: auth.auth, user_data: userData });
        await raw.waitFor((m) => m.event === "pusher:signin_success");
        const res = await lib.terminateUserConnections("carol");
        assert.equal(res.status, 200);
        assert.equal((await raw.closed()).code, 4009);
      },
    );

    await t.step(
      "private-encrypted- channels: the server relays ciphertext that pusher-js decrypts",
      async () => {
        const p = open();
        const ch = await subscribed(p, "private-encrypted-vault");
        const got = collect(ch, "secret");
        await phoenixJoinPrivate("private-encrypted-vault");
        await lib.trigger("private-encrypted-vault", "secret", { code: 1234 });
        await until(() => got.length === 1);
        assert.deepEqual(got, [{ code: 1234 }]);
        // A Phoenix subscriber of the same channel sees only the ciphertext.
        const f = await phoenix.waitFor((f) =>
          f[2] === "pubsub:key1:private-encrypted-vault" && f[3] === "secret"
        );
        const data = f[4].data as { nonce: string; ciphertext: string };
        assert.equal(typeof data.nonce, "string");
        assert.equal(typeof data.ciphertext, "string");
        assert.ok(!JSON.stringify(data).includes("1234"));
      },
    );

    await t.step(
      "authentication failures are 401 with Pusher's plain-text reasons; limits are 4xx",
      async () => {
        const body = JSON.stringify({ name: "e", channel: "news", data: "{}" });
        assert.equal((await signed(server.port, "POST", "/apps/app-1/events", body)).status, 200);
        const wrong = await signed(server.port, "POST", "/apps/app-1/events", body, {
          secret: "nope",
        });
        assert.equal(wrong.status, 401);
        assert.match(wrong.text, /^Invalid signature/);
        const stale = await signed(server.port, "POST", "/apps/app-1/events", body, {
          ts: Math.floor(Date.now() / 1000) - 601,
        });
        assert.equal(stale.status, 401);
        assert.match(stale.text, /^Timestamp expired/);
        const md5 = await signed(server.port, "POST", "/apps/app-1/events", body, {
          md5: "0".repeat(32),
        });
        assert.equal(md5.status, 401);
        assert.match(md5.text, /body_md5/);
        assert.equal((await signed(server.port, "POST", "/apps/nope/events", body)).status, 404);
        const big = JSON.stringify({ name: "e", channel: "news", data: "x".repeat(10 * 1024 + 1) });
        assert.equal((await signed(server.port, "POST", "/apps/app-1/events", big)).status, 413);
        const badName = JSON.stringify({ name: "e", channel: "bad name!", data: "{}" });
        assert.equal(
          (await signed(server.port, "POST", "/apps/app-1/events", badName)).status,
          400,
        );
        const many = JSON.stringify({
          name: "e",
          channels: Array.from({ length: 101 }, (_, i) => `c${i}`),
          data: "{}",
        });
        assert.equal((await signed(server.port, "POST", "/apps/app-1/events", many)).status, 400);
        assert.equal(
          (await signed(server.port, "POST", "/apps/app-1/events", "{not json")).status,
          400,
        );
        // Data whose JSON holds a key named __proto__ would be altered by storage: refused.
        const proto = JSON.stringify({ name: "e", channel: "news", data: '{"__proto__":{"x":1}}' });
        const refused = await signed(server.port, "POST", "/apps/app-1/events", proto);
        assert.deepEqual(refused, {
          status: 400,
          text: 'Invalid data: a key named "__proto__" is not supported',
        });
      },
    );
  } finally {
    for (const p of clients) p.disconnect();
    await phoenix.close();
    await server.stop();
  }
});
