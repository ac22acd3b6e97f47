// Per-app limits (docs/limits.md "Per-app limits") with the official clients: pusher-js on the
// socket, the `pusher` library on the REST API, and a Phoenix socket on the same channels. Each
// limit is set low in the apps file; over it nothing is published, the error is the one
// Pusher-protocol clients know, and /metrics counts the refusal per app and limit.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { call, token } from "../pubsub/helpers.ts";
import {
  client,
  collect,
  connected,
  type Message,
  type Pusher,
  RawPusher,
  serverLib,
  subscribed,
  until,
} from "../pusher/helpers.ts";

const APP: TestApp = {
  id: "app-1",
  key: "key1",
  secret: "secret1",
  max_presence_members_per_channel: 2,
  max_presence_member_bytes: 64,
  max_channel_name_length: 20,
  max_event_name_length: 12,
  max_event_payload_bytes: 64,
  max_event_channels: 2,
  max_event_batch_size: 2,
};
/** No limit set: Pusher's published limits apply. */
const PLAIN: TestApp = { id: "app-2", key: "key2", secret: "secret2" };

/** The subscription error pusher-js reports for `name`, or the subscription. */
function subscribeOutcome(p: Pusher, name: string): Promise<{ ok: true } | { error: unknown }> {
  const ch = p.subscribe(name);
  return new Promise((resolve) => {
    ch.bind("pusher:subscription_succeeded", () => resolve({ ok: true }));
    ch.bind("pusher:subscription_error", (error: unknown) => resolve({ error }));
  });
}

/** A REST call's refusal by the `pusher` library: its status and body. */
async function refusal(p: Promise<unknown>): Promise<{ status: number; body: string }> {
  const e = await p.then(
    () => assert.fail("expected a refusal"),
    (e: { status: number; body: string }) => e,
  );
  return { status: e.status, body: e.body };
}

/** `switchboard_limit_refusals_total` of app-1 by limit, from /metrics. */
async function refusals(baseUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^switchboard_limit_refusals_total\{(.*)\} (\d+)$/gm)) {
    const labels = Object.fromEntries(
      [...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (labels.app === "app-1") out[labels.limit] = Number(m[2]);
  }
  return out;
}

Deno.test("per-app limits: pusher-js, the pusher library and Phoenix are refused alike, nothing published, refusals counted", async (t) => {
  const server = await startInProcess({ apps: [APP, PLAIN] });
  const clients: Pusher[] = [];
  const open = (who: { user_id: string; user_info?: Record<string, unknown> }, app = APP) => {
    const p = client(server, who, app);
    clients.push(p);
    return p;
  };
  const phoenix = await RawSocket.connect(server.wsUrl("key1"));
  const lib = serverLib(server);
  try {
    await t.step(
      "max_presence_members_per_channel: the third user is refused (4100), on either protocol",
      async () => {
        const a = open({ user_id: "alice" });
        const b = open({ user_id: "bob" });
        await subscribed(a, "presence-room");
        const bobRoom = await subscribed(b, "presence-room");
        const added = collect(bobRoom, "pusher:member_added");
        const carol = await subscribeOutcome(open({ user_id: "carol" }), "presence-room");
        assert.ok("error" in carol);
        assert.deepEqual(carol.error, {
          type: "LimitReached",
          error:
            "Presence channel has reached its limit of 2 members (max_presence_members_per_channel)",
          status: 4100,
        });
        // The same user again (another tab) is no new member: admitted.
        assert.deepEqual(await subscribeOutcome(open({ user_id: "alice" }), "presence-room"), {
          ok: true,
        });
        const tok = await token(server, APP, phoenix.socketId, [
          "channel:subscribe:presence-room",
          "channel:presence:presence-room",
        ], "dave");
        const joined = await phoenix.join("pubsub:key1:presence-room", {
          auth: tok,
          channel_data: { user_id: "dave" },
        });
        assert.equal(joined.status, "error");
        assert.deepEqual(joined.response, {
          reason: "limit reached: presence channel has 2 members",
        });
        const users = await lib.get({ path: "/channels/presence-room/users" });
        assert.deepEqual(
          ((await users.json()) as { users: { id: string }[] }).users.map((u) => u.id).sort(),
          ["alice", "bob"],
        );
        await new Promise((r) => setTimeout(r, 200));
        assert.deepEqual(added, [], "no refused user was announced");
      },
    );

    await t.step(
      "max_presence_members_per_channel: joins at the same time cannot pass the cap together",
      async () => {
        const rush = await Promise.all(
          ["r1", "r2", "r3", "r4"].map((u) =>
            subscribeOutcome(open({ user_id: u }), "presence-rush")
          ),
        );
        assert.equal(rush.filter((o) => "ok" in o).length, 2);
        assert.equal(rush.filter((o) => "error" in o).length, 2);
      },
    );

    await t.step("max_presence_member_bytes: a larger user_info is refused (4301)", async () => {
      const big = await subscribeOutcome(
        open({ user_id: "erin", user_info: { bio: "x".repeat(80) } }),
        "presence-bios",
      );
      assert.ok("error" in big);
      assert.deepEqual(big.error, {
        type: "LimitReached",
        error: "Presence member info (user_info) larger than 64 bytes (max_presence_member_bytes)",
        status: 4301,
      });
      const small = await subscribeOutcome(
        open({ user_id: "erin", user_info: { bio: "short" } }),
        "presence-bios",
      );
      assert.deepEqual(small, { ok: true });
    });

    await t.step(
      "max_channel_name_length: subscribe 4009, REST 400, Phoenix refused; nothing published",
      async () => {
        const long = "news-" + "x".repeat(16); // 21 characters
        const p = open({ user_id: "u1" });
        const sub = await subscribeOutcome(p, long);
        assert.ok("error" in sub);
        assert.deepEqual(sub.error, {
          type: "LimitReached",
          error: "Channel name longer than 20 characters (max_channel_name_length)",
          status: 4009,
        });
        const news = await subscribed(p, "news");
        const got = collect(news, "hello");
        const r = await refusal(lib.trigger(["news", long], "hello", { n: 1 }));
        assert.equal(r.status, 400);
        assert.match(r.body, /max_channel_name_length/);
        const j = await phoenix.join(`pubsub:key1:${long}`, {});
        assert.deepEqual(j.response, {
          reason: "limit reached: channel name longer than 20 characters",
        });
        const native = await call(server, "POST", "/api/apps/app-1/trigger", {
          channel: long,
          event: "hello",
          data: 1,
        });
        assert.equal(native.status, 422);
        assert.match(JSON.stringify(native.body), /max_channel_name_length/);
        await lib.trigger("news", "hello", { n: 2 });
        await until(() => got.length === 1, 10_000, "the next event");
        assert.deepEqual(got, [{ n: 2 }], "the refused trigger published on no channel");
      },
    );

    await t.step(
      "max_event_name_length and max_event_payload_bytes: REST 400 / 413, client events pusher:error 4301",
      async () => {
        const p = open({ user_id: "u2" });
        const other = open({ user_id: "u3" });
        const ch = await subscribed(p, "private-talk");
        const seen = await subscribed(other, "private-talk");
        const got = collect(seen, "client-ok");
        const gotLong = collect(seen, "client-too-long");
        const gotBig = collect(seen, "client-big");
        const errors: { type: string; data: { code: number; message: string } }[] = [];
        p.connection.bind("error", (e: never) => errors.push(e));

        ch.trigger("client-too-long", { a: 1 }); // 15 characters
        await until(() => errors.length === 1, 10_000, "the name refusal");
        assert.equal(errors[0].type, "PusherError");
        assert.deepEqual(errors[0].data, {
          code: 4301,
          message:
            "Client event rejected: event name longer than 12 characters (max_event_name_length)",
        });
        ch.trigger("client-big", { s: "y".repeat(100) });
        await until(() => errors.length === 2, 10_000, "the payload refusal");
        assert.deepEqual(errors[1].data, {
          code: 4301,
          message: "Client event rejected: data larger than 64 bytes (max_event_payload_bytes)",
        });
        ch.trigger("client-ok", { s: "fits" });
        await until(() => got.length === 1, 10_000, "the event within the limits");
        assert.deepEqual(gotLong, []);
        assert.deepEqual(gotBig, []);
        assert.equal(p.connection.state, "connected", "the socket stays open");

        const name = await refusal(lib.trigger("private-talk", "thirteen-char", {}));
        assert.equal(name.status, 400);
        assert.match(name.body, /at most 12 characters \(max_event_name_length\)/);
        const big = await refusal(lib.trigger("private-talk", "ev", { s: "z".repeat(100) }));
        assert.equal(big.status, 413);
        assert.match(big.body, /limited to 64 bytes \(max_event_payload_bytes\)/);

        // Phoenix publishes are held to the same limits.
        const tok = await token(server, APP, phoenix.socketId, [
          "channel:subscribe:private-talk",
          "channel:publish:private-talk",
        ], "u4");
        const j = await phoenix.join("pubsub:key1:private-talk", { auth: tok });
        assert.equal(j.status, "ok");
        const longPush = await phoenix.push(
          "pubsub:key1:private-talk",
          j.joinRef,
          "client-too-long",
          {},
        );
        assert.deepEqual(longPush.response, {
          reason: "Validation failed: event name longer than 12 characters",
        });
        const bigPush = await phoenix.push("pubsub:key1:private-talk", j.joinRef, "client-big", {
          s: "y".repeat(100),
        });
        assert.deepEqual(bigPush.response, {
          reason: "Validation failed: payload larger than 64 bytes",
        });
        // The native HTTP API takes the app's max_event_payload_bytes once the apps file sets it.
        const nativeBig = await call(server, "POST", "/api/apps/app-1/trigger", {
          channel: "private-talk",
          event: "ev",
          data: { s: "z".repeat(100) },
        });
        assert.equal(nativeBig.status, 413);
        await new Promise((r) => setTimeout(r, 200));
        assert.deepEqual(gotLong, []);
        assert.deepEqual(gotBig, []);
      },
    );

    await t.step(
      "max_event_channels and max_event_batch_size: 400, nothing published",
      async () => {
        const p = open({ user_id: "u5" });
        const got = collect(await subscribed(p, "a1"), "ev");
        const many = await refusal(lib.trigger(["a1", "a2", "a3"], "ev", {}));
        assert.equal(many.status, 400);
        assert.match(many.body, /at most 2 \(max_event_channels\)/);
        const batch = await refusal(lib.triggerBatch([
          { channel: "a1", name: "ev", data: "1" },
          { channel: "a1", name: "ev", data: "2" },
          { channel: "a1", name: "ev", data: "3" },
        ]));
        assert.equal(batch.status, 400);
        assert.match(batch.body, /at most 2 events \(max_event_batch_size\)/);
        const pushed = await call(server, "POST", "/api/apps/app-1/push", {
          events: [1, 2, 3].map((i) => ({ channel: "a1", event: "ev", data: i })),
        });
        assert.equal(pushed.status, 422);
        await lib.triggerBatch([{ channel: "a1", name: "ev", data: "ok" }]);
        await until(() => got.length === 1, 10_000, "the accepted batch");
        assert.deepEqual(got, ["ok"]);
      },
    );

    await t.step("/metrics counts the refusals per app and limit", async () => {
      const counted = await refusals(server.baseUrl);
      assert.equal(counted.max_presence_members_per_channel, 4);
      assert.equal(counted.max_presence_member_bytes, 1);
      assert.equal(counted.max_channel_name_length, 4);
      assert.equal(counted.max_event_name_length, 3);
      assert.equal(counted.max_event_payload_bytes, 4);
      assert.equal(counted.max_event_channels, 1);
      assert.equal(counted.max_event_batch_size, 2);
    });

    await t.step(
      "an app without limits gets Pusher's: 100 channels, 10 events, 10 KiB, 164 characters",
      async () => {
        const plain = serverLib(server, PLAIN);
        const channels = Array.from({ length: 101 }, (_, i) => `c${i}`);
        // (The library itself refuses more than 100 channels: the request is made by hand.)
        const res = await plain.post({
          path: "/events",
          body: JSON.stringify({ name: "ev", channels, data: "{}" }),
        }).then(() => assert.fail("expected a refusal"), (e: { status: number }) => e);
        assert.equal(res.status, 400);
        assert.equal(
          (await refusal(plain.trigger("c", "ev", "x".repeat(10 * 1024 + 1)))).status,
          413,
        );
        assert.equal((await plain.trigger("c", "ev", "x".repeat(10 * 1024))).status, 200);
        const eleven = Array.from({ length: 11 }, () => ({ channel: "c", name: "ev", data: "1" }));
        assert.equal((await refusal(plain.triggerBatch(eleven))).status, 400);
        const p = open({ user_id: "u6" }, PLAIN);
        await connected(p);
        const sub = await subscribeOutcome(p, "n".repeat(165));
        assert.ok("error" in sub);
        assert.equal((sub.error as { status: number }).status, 4009);
        assert.deepEqual(await subscribeOutcome(p, "n".repeat(164)), { ok: true });
      },
    );
  } finally {
    for (const p of clients) p.disconnect();
    await phoenix.close();
    await server.stop();
  }
});

Deno.test("an app without settings caps a presence channel at Pusher's 100 members; the users list and subscription_succeeded stay within it", async () => {
  const server = await startInProcess({ apps: [PLAIN] });
  const lib = serverLib(server, PLAIN);
  const sockets: RawPusher[] = [];
  try {
    const join = async (user: string) => {
      const s = await RawPusher.connect(server, PLAIN.key);
      sockets.push(s);
      s.send("pusher:subscribe", {
        channel: "presence-big",
        ...lib.authorizeChannel(s.socketId, "presence-big", { user_id: user }),
      });
      return await s.waitFor(
        (m) =>
          m.event === "pusher_internal:subscription_succeeded" ||
          m.event === "pusher:subscription_error",
        30_000,
      );
    };
    let last: Message | undefined;
    for (let i = 1; i <= 100; i++) {
      last = await join(`user-${i}`);
      assert.equal(last.event, "pusher_internal:subscription_succeeded", `user ${i}`);
    }
    assert.equal(JSON.parse(last!.data as string).presence.count, 100);
    const over = await join("user-101");
    assert.equal(over.event, "pusher:subscription_error");
    assert.deepEqual(JSON.parse(over.data as string), {
      type: "LimitReached",
      error:
        "Presence channel has reached its limit of 100 members (max_presence_members_per_channel)",
      status: 4100,
    });
    const users = (await (await lib.get({ path: "/channels/presence-big/users" })).json()) as {
      users: unknown[];
    };
    assert.equal(users.users.length, 100);
  } finally {
    for (const s of sockets) s.close();
    await server.stop();
  }
});
