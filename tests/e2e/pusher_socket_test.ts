// The Pusher WebSocket protocol with the official pusher-js client (Node build, unmodified)
// and the `pusher` server library signing channel and user authorizations.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { token, trigger } from "../pubsub/helpers.ts";
import { client, collect, connected, type Pusher, subscribed, until } from "../pusher/helpers.ts";

const APP: TestApp = { id: "app-1", key: "key1", secret: "secret1" };
const NO_CLIENT: TestApp = {
  id: "app-2",
  key: "key2",
  secret: "secret2",
  enable_client_messages: false,
};
const SLOW: TestApp = { id: "app-3", key: "key3", secret: "secret3", max_client_events_per_sec: 2 };

Deno.test("pusher-js: connect, public/private/presence channels, client events, both protocols on one channel", async (t) => {
  const server = await startInProcess({ apps: [APP, NO_CLIENT, SLOW] });
  const clients: Pusher[] = [];
  const open = (
    who: { user_id: string; user_info?: Record<string, unknown> } = { user_id: "u1" },
    app = APP,
  ) => {
    const p = client(server, who, app);
    clients.push(p);
    return p;
  };
  const phoenix = await RawSocket.connect(server.wsUrl("key1"));
  try {
    await t.step("connects and gets a Pusher socket id", async () => {
      const p = open();
      await connected(p);
      assert.match(p.connection.socket_id, /^\d+\.\d+$/);
    });

    await t.step("an unknown app key fails with 4001 and pusher-js does not retry", async () => {
      const p = client(server, { user_id: "x" }, { id: "nope", key: "nope", secret: "s" });
      clients.push(p);
      const errors: unknown[] = [];
      p.connection.bind("error", (e: unknown) => errors.push(e));
      await until(() => errors.length > 0, 5000, "failure");
      assert.equal((errors[0] as { error: { data: { code: number } } }).error.data.code, 4001);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(p.connection.state, "disconnected", "refused, not retried");
    });

    await t.step(
      "a public channel gets events triggered over HTTP, with the same serials a Phoenix member sees",
      async () => {
        const p = open();
        const ch = await subscribed(p, "news");
        const got = collect(ch, "hello");
        await phoenix.join("pubsub:key1:news", {});
        for (let i = 1; i <= 3; i++) {
          assert.equal((await trigger(server, "news", "hello", { i })).status, 200);
        }
        await until(() => got.length === 3, 5000, "three events");
        assert.deepEqual(got, [{ i: 1 }, { i: 2 }, { i: 3 }]);
        const frames = await until(() =>
          phoenix.frames.filter((f) => f[3] === "hello").length === 3
        )
          .then(() => phoenix.frames.filter((f) => f[3] === "hello"));
        assert.deepEqual(frames.map((f) => f[4].serial), [1, 2, 3]);
        // String data stays a string; JSON text is parsed by pusher-js as Pusher itself does.
        await trigger(server, "news", "hello", "plain text");
        await until(() => got.length === 4);
        assert.equal(got[3], "plain text");
      },
    );

    await t.step(
      "private channels need the Pusher signature; a bad one is a subscription_error",
      async () => {
        const p = open();
        const ch = await subscribed(p, "private-orders");
        const got = collect(ch, "paid");
        await trigger(server, "private-orders", "paid", { n: 1 });
        await until(() => got.length === 1);
        // Signed for another socket: refused.
        const q = client(server, { user_id: "u1" }, { ...APP, secret: "wrong" });
        clients.push(q);
        await assert.rejects(subscribed(q, "private-orders"), /AuthError.*401/);
      },
    );

    await t.step(
      "presence: members across pusher-js and Phoenix, one user on two sockets counted once",
      async () => {
        const a = open({ user_id: "alice", user_info: { name: "Alice" } });
        const b = open({ user_id: "bob" });
        const b2 = open({ user_id: "bob" });
        const chA = await subscribed(a, "presence-room");
        const added: string[] = [];
        const removed: string[] = [];
        chA.bind("pusher:member_added", (m: { id: string }) => added.push(m.id));
        chA.bind("pusher:member_removed", (m: { id: string }) => removed.push(m.id));
        await subscribed(b, "presence-room");
        await subscribed(b2, "presence-room");
        // A Phoenix member of the same channel.
        const tok = await token(server, APP, phoenix.socketId, [
          "channel:subscribe:presence-room",
          "channel:presence:presence-room",
        ], "carol");
        const j = await phoenix.join("pubsub:key1:presence-room", {
          auth: tok,
          channel_data: { user_id: "carol" },
        });
        assert.equal(j.status, "ok");
        assert.deepEqual(
          (j.response.presence as { members: { user_id: string }[] }).members.map((m) => m.user_id)
            .sort(),
          ["alice", "bob", "carol"],
        );
        await until(() => added.length === 2, 5000, "member_added");
        assert.deepEqual(added, ["bob", "carol"]);
        assert.equal(chA.members.count, 3);
        assert.deepEqual(chA.members.get("alice").info, { name: "Alice" });
        b.unsubscribe("presence-room");
        await new Promise((r) => setTimeout(r, 200));
        assert.deepEqual(removed, [], "bob still has another socket");
        b2.disconnect();
        await until(() => removed.length === 1, 5000, "member_removed");
        assert.deepEqual(removed, ["bob"]);
        const left = await phoenix.waitFor((f) => f[3] === "presence:leave");
        assert.deepEqual(left[4], { user_id: "bob" });
      },
    );

    await t.step("client events reach the others of both protocols, never the sender", async () => {
      const a = open({ user_id: "alice" });
      const b = open({ user_id: "bob" });
      const chA = await subscribed(a, "presence-chat");
      const chB = await subscribed(b, "presence-chat");
      const gotA = collect(chA, "client-typing");
      const gotB: [unknown, unknown][] = [];
      chB.bind("client-typing", (d: unknown, meta: unknown) => gotB.push([d, meta]));
      const tok = await token(server, APP, phoenix.socketId, [
        "channel:subscribe:presence-chat",
        "channel:presence:presence-chat",
        "channel:publish:presence-chat",
      ], "carol");
      const j = await phoenix.join("pubsub:key1:presence-chat", {
        auth: tok,
        channel_data: { user_id: "carol" },
      });
      chA.trigger("client-typing", { on: true });
      await until(() => gotB.length === 1, 5000, "client event at bob");
      assert.deepEqual(gotB[0], [{ on: true }, { user_id: "alice" }]);
      const f = await phoenix.waitFor((f) => f[3] === "client-typing");
      assert.equal(f[4].client_id, "alice");
      assert.deepEqual(f[4].data, { on: true });
      assert.equal(typeof f[4].serial, "number");
      // A Phoenix client publish reaches pusher-js subscribers as that event name.
      const r = await phoenix.push("pubsub:key1:presence-chat", j.joinRef, "client-typing", {
        on: false,
      });
      assert.equal(r.status, "ok");
      await until(() => gotA.length === 1 && gotB.length === 2, 5000, "phoenix publish");
      assert.deepEqual(gotA, [{ on: false }]);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(gotA.length, 1, "the sender never gets its own client event");
    });

    await t.step(
      "client events: public channels, disabled apps and the rate cap are refused with pusher:error",
      async () => {
        const errorsOf = (p: Pusher) => {
          const errs: { data: { code: number | null; message: string } }[] = [];
          p.connection.bind(
            "error",
            (e: { data: { code: number | null; message: string } }) => errs.push(e),
          );
          return errs;
        };
        const p = open();
        const errs = errorsOf(p);
        const pub = await subscribed(p, "news");
        pub.trigger("client-x", {});
        await until(() => errs.length === 1);
        assert.match(errs[0].data.message, /only allowed on private and presence channels/);

        const d = open({ user_id: "u" }, NO_CLIENT);
        const dErrs = errorsOf(d);
        const dch = await subscribed(d, "private-x");
        dch.trigger("client-x", {});
        await until(() => dErrs.length === 1);
        assert.match(dErrs[0].data.message, /disabled/);

        const s = open({ user_id: "u" }, SLOW);
        const sErrs = errorsOf(s);
        const sch = await subscribed(s, "private-x");
        for (let i = 0; i < 6; i++) sch.trigger("client-x", { i });
        await until(() => sErrs.length >= 1);
        assert.equal(sErrs[0].data.code, 4301);
      },
    );
  } finally {
    for (const p of clients) p.disconnect();
    phoenix.close();
    await server.stop();
  }
});
