// Wire details of the Pusher protocol that pusher-js does not show: exact messages, the
// serial extension and `after_serial` replay, server pings, close codes.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { startServer, type TestApp } from "../helpers/server.ts";
import { trigger } from "../pubsub/helpers.ts";
import { RawPusher } from "../pusher/helpers.ts";

const APP: TestApp = { id: "app-1", key: "key1", secret: "secret1" };
const sign = (data: string) => `key1:${createHmac("sha256", "secret1").update(data).digest("hex")}`;

Deno.test("Pusher wire: handshake, pong, event shape with serial, after_serial replay, presence data, errors", async (t) => {
  const server = await startServer({ apps: [APP], args: ["--idle-timeout", "2"] });
  const socks: RawPusher[] = [];
  const connect = async (key = "key1", query?: string) => {
    const s = await RawPusher.connect(server, key, query);
    socks.push(s);
    return s;
  };
  try {
    await t.step(
      "connection_established carries socket_id and activity_timeout as a JSON string",
      async () => {
        const s = await connect();
        const first = s.messages[0];
        assert.equal(first.event, "pusher:connection_established");
        assert.equal(typeof first.data, "string");
        const data = JSON.parse(first.data as string);
        assert.match(data.socket_id, /^\d+\.\d+$/);
        assert.equal(data.activity_timeout, 2);
        s.send("pusher:ping", {});
        assert.deepEqual(await s.waitFor((m) => m.event === "pusher:pong"), {
          event: "pusher:pong",
          data: "{}",
        });
      },
    );

    await t.step("a delivered event is { event, channel, data: JSON string, serial }", async () => {
      const s = await connect();
      s.send("pusher:subscribe", { channel: "news" });
      const ok = await s.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
      assert.deepEqual(ok, {
        event: "pusher_internal:subscription_succeeded",
        channel: "news",
        data: "{}",
        serial: 0,
        epoch: "0",
      });
      await trigger(server, "news", "hello", { a: 1 });
      const got = await s.waitFor((m) => m.event === "hello");
      assert.deepEqual(got, { event: "hello", channel: "news", data: '{"a":1}', serial: 1 });
    });

    await t.step(
      "after_serial replays exactly the missed events before subscription_succeeded",
      async () => {
        for (let i = 1; i <= 5; i++) await trigger(server, "feed", "tick", i);
        const s = await connect();
        s.send("pusher:subscribe", { channel: "feed", after_serial: 2 });
        const ok = await s.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
        assert.equal(ok.serial, 5);
        assert.equal(ok.replay, "complete");
        assert.equal(ok.first_serial, 1);
        await trigger(server, "feed", "tick", 6);
        await s.waitFor((m) => m.event === "tick" && m.serial === 6);
        const order = s.messages.filter((m) => m.channel === "feed").map((m) =>
          m.event === "tick" ? m.serial : "ok"
        );
        assert.deepEqual(order, [3, 4, 5, "ok", 6]);
        s.send("pusher:subscribe", { channel: "feed2", after_serial: "x" });
        const bad = await s.waitFor((m) => m.event === "pusher:subscription_error");
        assert.deepEqual(JSON.parse(bad.data as string), {
          type: "InvalidRequest",
          error: "invalid after_serial",
          status: 400,
        });
      },
    );

    await t.step("presence subscription_succeeded has Pusher's { ids, hash, count }", async () => {
      const s = await connect();
      const channelData = JSON.stringify({ user_id: "u7", user_info: { name: "Ann" } });
      s.send("pusher:subscribe", {
        channel: "presence-x",
        auth: sign(`${s.socketId}:presence-x:${channelData}`),
        channel_data: channelData,
      });
      const ok = await s.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
      assert.deepEqual(JSON.parse(ok.data as string), {
        presence: { ids: ["u7"], hash: { u7: { name: "Ann" } }, count: 1 },
      });
      // Signed for another socket id: refused, nothing joined.
      const other = await connect();
      other.send("pusher:subscribe", {
        channel: "presence-x",
        auth: sign(`${s.socketId}:presence-x:${channelData}`),
        channel_data: channelData,
      });
      const err = await other.waitFor((m) => m.event === "pusher:subscription_error");
      assert.equal(err.channel, "presence-x");
      assert.equal(JSON.parse(err.data as string).status, 401);
    });

    await t.step("non-ASCII data, user ids and user info cross both ways exactly", async () => {
      const s = await connect();
      const user = "zoë-🚀-用户";
      const channelData = JSON.stringify({
        user_id: user,
        user_info: { name: "Zoë 🚀", city: "Zürich" },
      });
      s.send("pusher:subscribe", {
        channel: "presence-ü",
        auth: sign(`${s.socketId}:presence-ü:${channelData}`),
        channel_data: channelData,
      });
      const bad = await s.waitFor((m) => m.channel === "presence-ü");
      // Channel names keep Pusher's ASCII charset: a refusal, not a crash.
      assert.equal(bad.event, "pusher:subscription_error");
      s.send("pusher:subscribe", {
        channel: "presence-u8",
        auth: sign(`${s.socketId}:presence-u8:${channelData}`),
        channel_data: channelData,
      });
      const ok = await s.waitFor((m) =>
        m.event === "pusher_internal:subscription_succeeded" && m.channel === "presence-u8"
      );
      assert.deepEqual(JSON.parse(ok.data as string).presence.hash, {
        [user]: { name: "Zoë 🚀", city: "Zürich" },
      });
      const text = 'café 🚀 — ɐpsᴉpǝ uʍop 日本語 \u0000 "quoted"';
      await trigger(server, "presence-u8", "note", { text });
      const got = await s.waitFor((m) => m.event === "note");
      assert.deepEqual(JSON.parse(got.data as string), { text });
    });

    await t.step("bad input gets pusher:error and leaves the socket usable", async () => {
      const s = await connect();
      s.send("pusher:subscribe", { channel: "bad name!" });
      const err = await s.waitFor((m) => m.event === "pusher:subscription_error");
      assert.equal(JSON.parse(err.data as string).type, "InvalidChannel");
      (s as unknown as { send(e: string, d: unknown): void }).send("nonsense", {});
      const unknown = await s.waitFor((m) => m.event === "pusher:error");
      assert.deepEqual((unknown.data as { code: null }).code, null);
      s.send("pusher:ping", {});
      await s.waitFor((m) => m.event === "pusher:pong");
      // A client event whose data storage could not keep exactly is refused, not altered.
      const channelData = JSON.stringify({ user_id: "u8" });
      s.send("pusher:subscribe", {
        channel: "presence-y",
        auth: sign(`${s.socketId}:presence-y:${channelData}`),
        channel_data: channelData,
      });
      await s.waitFor((m) =>
        m.event === "pusher_internal:subscription_succeeded" && m.channel === "presence-y"
      );
      (s as unknown as { send(e: string, d: unknown, c: string): void }).send(
        "client-x",
        JSON.parse('{"__proto__":{"a":1}}'),
        "presence-y",
      );
      const refused = await s.waitFor((m) =>
        m.event === "pusher:error" && /__proto__/.test(JSON.stringify(m.data))
      );
      assert.equal((refused.data as { code: null }).code, null);
    });

    await t.step(
      "signin: a valid signature gives signin_success and the user's own channel",
      async () => {
        const s = await connect();
        const userData = JSON.stringify({ id: "u9" });
        s.send("pusher:signin", {
          auth: sign(`${s.socketId}::user::${userData}`),
          user_data: userData,
        });
        const ok = await s.waitFor((m) => m.event === "pusher:signin_success");
        assert.deepEqual(JSON.parse(ok.data as string), { user_data: userData });
        s.send("pusher:subscribe", { channel: "#server-to-user-u9", auth: "" });
        await s.waitFor((m) =>
          m.event === "pusher_internal:subscription_succeeded" && m.channel === "#server-to-user-u9"
        );
        s.send("pusher:subscribe", { channel: "#server-to-user-other", auth: "" });
        await s.waitFor((m) =>
          m.event === "pusher:subscription_error" && m.channel === "#server-to-user-other"
        );
        const bad = await connect();
        bad.send("pusher:signin", { auth: sign(`1.1::user::${userData}`), user_data: userData });
        assert.equal((await bad.closed()).code, 4009);
      },
    );

    await t.step(
      "unknown app: pusher:error 4001 then close 4001; unsupported protocol: 4007",
      async () => {
        const s = await connect("nope");
        assert.deepEqual(s.messages[0].data, {
          code: 4001,
          message: "App key nope does not exist",
        });
        assert.equal((await s.closed()).code, 4001);
        const old = await connect("key1", "?protocol=3");
        assert.equal((await old.closed()).code, 4007);
      },
    );

    await t.step(
      "a silent socket is pinged after activity_timeout and closed with 4201 without a pong",
      async () => {
        const s = await connect();
        await s.waitFor((m) => m.event === "pusher:ping", 6000);
        assert.equal((await s.closed(6000)).code, 4201);
      },
    );

    await t.step("shutdown closes Pusher sockets with 4200 (reconnect)", async () => {
      const s = await connect();
      await server.stop();
      const err = await s.waitFor((m) => m.event === "pusher:error");
      assert.equal((err.data as { code: number }).code, 4200);
      assert.equal((await s.closed()).code, 4200);
    });
  } finally {
    for (const s of socks) s.close();
    await server.stop();
  }
});

Deno.test("max_connections counts sockets of both protocols: Pusher gets 4100, Phoenix a 503 upgrade", async () => {
  const CAPPED: TestApp = { id: "app-c", key: "keyc", secret: "secretc", max_connections: 2 };
  const server = await startServer({ apps: [CAPPED] });
  const socks: RawPusher[] = [];
  try {
    socks.push(await RawPusher.connect(server, "keyc"));
    const phoenix = new WebSocket(server.wsUrl("keyc"));
    await new Promise((resolve) => (phoenix.onopen = resolve));
    const third = await RawPusher.connect(server, "keyc");
    socks.push(third);
    assert.deepEqual(third.messages[0].data, {
      code: 4100,
      message: "Over capacity: the app is at its max_connections",
    });
    assert.equal((await third.closed()).code, 4100);
    const res = await fetch(server.wsUrl("keyc").replace("ws:", "http:"), {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      },
    });
    assert.equal(res.status, 503);
    await res.body?.cancel();
    // A slot frees when a socket closes.
    socks[0].close();
    await socks[0].closed();
    await new Promise((r) => setTimeout(r, 100));
    const again = await RawPusher.connect(server, "keyc");
    socks.push(again);
    assert.equal(again.messages[0].event, "pusher:connection_established");
    phoenix.close();
  } finally {
    for (const s of socks) s.close();
    await server.stop();
  }
});
