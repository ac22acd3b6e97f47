import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { call, sdkFor } from "../pubsub/helpers.ts";

const TOPIC = "pubsub:key1:presence-room";

Deno.test("presence: two users, one with two sockets, counted once; join/leave broadcast to others", async () => {
  const server = await startServer();
  const sdk = sdkFor(server);
  const sockets: RawSocket[] = [];
  async function enter(userId: string, info: unknown) {
    const s = await RawSocket.connect(server.wsUrl("key1"));
    sockets.push(s);
    const { auth, channel_data } = await sdk.authenticate(s.socketId, "presence-room", { user_id: userId, user_info: info });
    const r = await s.join(TOPIC, { auth, channel_data });
    assert.equal(r.status, "ok");
    return { s, r };
  }
  try {
    const a1 = await enter("alice", { n: "A" });
    assert.deepEqual(a1.r.response.presence, { members: [{ user_id: "alice", user_info: { n: "A" } }], count: 1 });
    const b = await enter("bob", { n: "B" });
    assert.equal((b.r.response.presence as any).count, 2);
    const joined = await a1.s.waitFor((f) => f[2] === TOPIC && f[3] === "presence:join");
    assert.deepEqual(joined[4], { user_id: "bob", user_info: { n: "B" } });
    // The joiner does not get its own join event.
    assert.equal(b.s.events(TOPIC, "presence:join").length, 0);

    // Alice's second socket: no new join broadcast, still two members.
    const a2 = await enter("alice", { n: "A" });
    assert.equal((a2.r.response.presence as any).count, 2);
    assert.equal((await call(server, "GET", "/api/apps/app-1/channels/presence-room")).body.user_count, 2);

    // Alice closes one socket: no leave. Then the other: leave reaches bob.
    await a1.s.close();
    await trigger(server);
    await b.s.waitFor((f) => f[3] === "marker");
    assert.equal(b.s.events(TOPIC, "presence:leave").length, 0);
    assert.equal(b.s.events(TOPIC, "presence:join").length, 0);
    await a2.s.close();
    const left = await b.s.waitFor((f) => f[2] === TOPIC && f[3] === "presence:leave");
    assert.deepEqual(left[4], { user_id: "alice", user_info: { n: "A" } });
    const users = await call(server, "GET", "/api/apps/app-1/channels/presence-room/users");
    assert.deepEqual(users.body, { users: [{ user_id: "bob", user_info: { n: "B" } }], count: 1 });
    // A phx_leave also counts as leaving.
    const c = await enter("carol", null);
    await b.s.waitFor((f) => f[3] === "presence:join" && (f[4] as any).user_id === "carol");
    c.s.send(c.r.joinRef, TOPIC, "phx_leave", {});
    await b.s.waitFor((f) => f[3] === "presence:leave" && (f[4] as any).user_id === "carol");
  } finally {
    for (const s of sockets) await s.close();
    await server.stop();
  }
});

function trigger(server: { baseUrl: string; headers(): Record<string, string> }) {
  return fetch(`${server.baseUrl}/api/apps/app-1/trigger`, {
    method: "POST",
    headers: server.headers(),
    body: JSON.stringify({ channel: "presence-room", event: "marker", data: null }),
  }).then((r) => r.text());
}
