// Channel presence in-process (moved from tests/e2e/pubsub_presence_test.ts, which needed no
// process): two users, one with two sockets, counted once; join and leave told to the others,
// on a socket close as on a leave.
import assert from "node:assert/strict";
import { type Harness, withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const TOPIC = "pubsub:key1:presence-room";
const sdk = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-1",
  appKey: "key1",
  appSecret: "secret1",
});

const enter = async (h: Harness, userId: string, info: unknown) => {
  const m = await h.join(
    TOPIC,
    async (socketId) => ({
      ...(await sdk.authenticate(socketId, "presence-room", { user_id: userId, user_info: info })),
    }),
  );
  assert.equal(m.reply.status, "ok", JSON.stringify(m.reply));
  return m;
};

Deno.test("harness presence: two users, one with two sockets, counted once; join/leave told to the others", async () => {
  await withHarness(async (h) => {
    const a1 = await enter(h, "alice", { n: "A" });
    assert.deepEqual(a1.reply.response.presence, {
      members: [{ user_id: "alice", user_info: { n: "A" } }],
      count: 1,
    });
    const b = await enter(h, "bob", { n: "B" });
    assert.equal(b.reply.response.presence.count, 2);
    assert.deepEqual(await a1.assertPush("presence:join"), {
      user_id: "bob",
      user_info: { n: "B" },
    });
    // The joiner does not get its own join event.
    assert.equal(b.events("presence:join").length, 0);

    // Alice's second socket: no new join event, still two members.
    const a2 = await enter(h, "alice", { n: "A" });
    assert.equal(a2.reply.response.presence.count, 2);
    assert.equal(
      (await h.http("GET", "/api/apps/app-1/channels/presence-room")).body.user_count,
      2,
    );

    // Alice closes one socket: no leave. Then the other: the leave reaches bob.
    a1.leave("close");
    assert.equal(b.events("presence:leave").length, 0);
    assert.equal(b.events("presence:join").length, 0);
    a2.leave("close");
    assert.deepEqual(await b.assertPush("presence:leave"), {
      user_id: "alice",
      user_info: { n: "A" },
    });
    const users = await h.http("GET", "/api/apps/app-1/channels/presence-room/users");
    assert.deepEqual(users.body, { users: [{ user_id: "bob", user_info: { n: "B" } }], count: 1 });
    // A phx_leave also counts as leaving.
    const c = await enter(h, "carol", null);
    await b.assertPush("presence:join", (p) => p.user_id === "carol");
    c.leave("leave");
    await b.assertPush("presence:leave", (p) => p.user_id === "carol");
  });
});
