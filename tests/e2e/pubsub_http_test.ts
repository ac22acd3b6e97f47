import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { call, token, trigger } from "../pubsub/helpers.ts";

const APP: TestApp = { id: "app-1", key: "key1", secret: "secret1" };
const SLOW: TestApp = {
  id: "app-3",
  key: "key3",
  secret: "secret3",
  max_backend_events_per_sec: 3,
};

Deno.test("pubsub HTTP: trigger, push, history, info routes, limits and errors", async (t) => {
  const server = await startInProcess({ apps: [APP, SLOW], args: ["--history-max-count", "5"] });
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    await t.step("trigger answers the serial and delivers { serial, data }", async () => {
      const j = await sock.join("pubsub:key1:news", {});
      assert.equal(j.status, "ok");
      const r = await trigger(server, "news", "hello", { a: 1 });
      assert.deepEqual(r, { status: 200, body: { serial: 1 } });
      const f = await sock.waitFor((f) => f[2] === "pubsub:key1:news" && f[3] === "hello");
      assert.deepEqual(f[4], { serial: 1, data: { a: 1 } });
      // The app key is accepted in place of the app id.
      assert.deepEqual(
        (await call(server, "POST", "/api/apps/key1/trigger", {
          channel: "news",
          event: "e",
          data: null,
        })).body,
        { serial: 2 },
      );
    });
    await t.step("trigger on an ephemeral channel is relayed with serial null", async () => {
      await sock.join("pubsub:key1:ephemeral-t", {});
      assert.deepEqual((await trigger(server, "ephemeral-t", "tick", 5)).body, { serial: null });
      const f = await sock.waitFor((f) => f[2] === "pubsub:key1:ephemeral-t" && f[3] === "tick");
      assert.deepEqual(f[4], { serial: null, data: 5 });
    });
    await t.step("push appends atomically per channel and answers serials per event", async () => {
      const r = await call(server, "POST", "/api/apps/app-1/push", {
        events: [
          { channel: "p1", event: "a", data: 1 },
          { channel: "p2", event: "b", data: 2 },
          { channel: "p1", event: "c", data: 3 },
        ],
      });
      assert.deepEqual(r, { status: 200, body: { serials: [1, 1, 2] } });
    });
    await t.step("history pages oldest first, bounded by --history-max-count", async () => {
      for (let i = 1; i <= 8; i++) await trigger(server, "h", "n", i);
      const all = await call(server, "GET", "/api/apps/app-1/channels/h/history");
      assert.equal(all.status, 200);
      assert.deepEqual(all.body.items.map((i: any) => i.serial), [4, 5, 6, 7, 8]);
      assert.deepEqual(all.body.items.map((i: any) => i.data), [4, 5, 6, 7, 8]);
      assert.equal(all.body.items[0].event, "n");
      assert.equal(typeof all.body.items[0].published_at, "number");
      assert.equal(all.body.first_serial, 4);
      assert.equal(all.body.serial, 8);
      assert.equal(all.body.next, null);
      const page = await call(server, "GET", "/api/apps/app-1/channels/h/history?after=4&limit=2");
      assert.deepEqual(page.body.items.map((i: any) => i.serial), [5, 6]);
      assert.equal(page.body.next, 6);
      const rest = await call(
        server,
        "GET",
        `/api/apps/app-1/channels/h/history?after=${page.body.next}&limit=2`,
      );
      assert.deepEqual(rest.body.items.map((i: any) => i.serial), [7, 8]);
      assert.equal(rest.body.next, null);
      const none = await call(server, "GET", "/api/apps/app-1/channels/never/history");
      assert.deepEqual(none.body, { items: [], serial: 0, first_serial: 1, next: null });
      const eph = await call(server, "GET", "/api/apps/app-1/channels/ephemeral-t/history");
      assert.deepEqual(eph.body, { items: [], serial: null, first_serial: null, next: null });
    });
    await t.step("channel list and one channel", async () => {
      const list = await call(server, "GET", "/api/apps/app-1/channels?info=subscription_count");
      assert.deepEqual(list.body.channels.news, { subscription_count: 1 });
      const pre = await call(server, "GET", "/api/apps/app-1/channels?filter_by_prefix=ephemeral-");
      assert.deepEqual(pre.body, { channels: { "ephemeral-t": {} } });
      const one = await call(server, "GET", "/api/apps/app-1/channels/news");
      assert.deepEqual(one.body, { occupied: true, subscription_count: 1, serial: 2 });
      const empty = await call(server, "GET", "/api/apps/app-1/channels/h");
      assert.deepEqual(empty.body, { occupied: false, subscription_count: 0, serial: 8 });
    });
    await t.step("presence user_count and users", async () => {
      const caps = ["channel:subscribe:presence-r", "channel:presence:presence-r"];
      const tk = await token(server, APP, sock.socketId, caps, "42");
      const j = await sock.join("pubsub:key1:presence-r", {
        auth: tk,
        channel_data: { user_id: 42, user_info: { name: "x" } },
      });
      assert.equal(j.status, "ok");
      const one = await call(server, "GET", "/api/apps/app-1/channels/presence-r");
      assert.deepEqual(one.body, {
        occupied: true,
        subscription_count: 1,
        serial: 0,
        user_count: 1,
      });
      const users = await call(server, "GET", "/api/apps/app-1/channels/presence-r/users");
      assert.deepEqual(users.body, {
        users: [{ user_id: "42", user_info: { name: "x" } }],
        count: 1,
      });
      const list = await call(
        server,
        "GET",
        "/api/apps/app-1/channels?filter_by_prefix=presence-&info=subscription_count,user_count",
      );
      assert.deepEqual(list.body, {
        channels: { "presence-r": { subscription_count: 1, user_count: 1 } },
      });
      const notPresence = await call(server, "GET", "/api/apps/app-1/channels/news/users");
      assert.equal(notPresence.status, 422);
    });
    await t.step("errors use the JSON:API shape", async () => {
      const bad = await call(server, "POST", "/api/apps/app-1/trigger", "{nope");
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errors[0].status, "400");
      const badName = await trigger(server, "bad name", "e", 1);
      assert.equal(badName.status, 422);
      assert.equal(badName.body.errors[0].title, "Unprocessable Entity");
      assert.equal((await trigger(server, "ok", "", 1)).status, 422);
      assert.equal((await trigger(server, "ok", "phx_x", 1)).status, 422);
      assert.equal((await trigger(server, "ok", "x".repeat(201), 1)).status, 422);
      const big = await trigger(server, "ok", "e", "x".repeat(70_000));
      assert.equal(big.status, 413);
      assert.equal(big.body.errors[0].title, "Payload Too Large");
      const tooMany = await call(server, "POST", "/api/apps/app-1/push", {
        events: Array.from({ length: 101 }, () => ({ channel: "a", event: "e" })),
      });
      assert.equal(tooMany.status, 422);
      const badItem = await call(server, "POST", "/api/apps/app-1/push", {
        events: [{ channel: "a", event: "e" }, { channel: "a" }],
      });
      assert.equal(badItem.status, 422);
      assert.equal(
        (await call(server, "GET", "/api/apps/app-1/channels/a/history?limit=0")).status,
        422,
      );
      assert.equal(
        (await call(server, "GET", "/api/apps/app-1/channels/a/history?after=x")).status,
        422,
      );
      // Nothing of the refused batch was stored.
      assert.deepEqual((await call(server, "GET", "/api/apps/app-1/channels/a")).body.serial, 0);
      const wrong = await fetch(`${server.baseUrl}/api/apps/app-1/trigger`, {
        method: "POST",
        headers: { "x-app-key": "key1", "x-app-secret": "wrong" },
        body: "{}",
      });
      assert.equal(wrong.status, 401);
      assert.deepEqual(await wrong.json(), { errors: [{ status: "401", title: "Unauthorized" }] });
      const otherApp = await call(server, "POST", "/api/apps/app-3/trigger", {
        channel: "a",
        event: "e",
      });
      assert.equal(otherApp.status, 401);
    });
    await t.step("over max_backend_events_per_sec answers 429", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await trigger(server, "r", "e", i, SLOW)).status);
      assert.ok(statuses.includes(200));
      const limited = await trigger(server, "r", "e", 0, SLOW);
      const r = limited.status === 429
        ? limited
        : await call(server, "POST", "/api/apps/app-3/push", {
          events: [1, 2, 3, 4].map(() => ({ channel: "r", event: "e" })),
        }, SLOW);
      assert.equal(r.status, 429);
      assert.deepEqual(r.body.errors[0].status, "429");
      assert.deepEqual(r.body.errors[0].title, "Too Many Requests");
      assert.equal(typeof r.body.errors[0].detail, "string");
      assert.ok(statuses.includes(429));
    });
  } finally {
    await sock.close();
    await server.stop();
  }
});
