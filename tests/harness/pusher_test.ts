// The Pusher face in process: a Pusher protocol connection over the harness's recording
// transport and the signed REST API through the products' routes, over the same channel
// service as the Phoenix protocol (one channel, one stream, whichever protocol).
import assert from "node:assert/strict";
import { withHarness } from "./channel_harness.ts";

Deno.test("harness/pusher: connect, subscribe, a REST event reaches Pusher and Phoenix subscribers", () =>
  withHarness(async (h) => {
    const p = h.pusherSocket();
    const established = await p.assertMessage("pusher:connection_established");
    assert.match(p.socketId, /^\d+\.\d+$/);
    assert.equal(typeof JSON.parse(established.data).activity_timeout, "number");

    p.send({ event: "pusher:subscribe", data: { channel: "harness-room" } });
    await p.assertMessage(
      "pusher_internal:subscription_succeeded",
      (m) => m.channel === "harness-room",
    );
    const phoenix = await h.join("pubsub:key1:harness-room");
    assert.equal(phoenix.reply.status, "ok");

    const res = await h.pusherRest("POST", "/apps/app-1/events", {
      name: "greet",
      channels: ["harness-room"],
      data: JSON.stringify({ hello: "world" }),
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = await p.assertMessage("greet", (m) => m.channel === "harness-room");
    assert.deepEqual(JSON.parse(got.data), { hello: "world" });
    await phoenix.assertPush("greet");
  }));

Deno.test("harness/pusher: REST refuses a bad signature; an unknown key gets 4001 and a close", () =>
  withHarness(async (h) => {
    const unsigned = await h.http("POST", "/apps/app-1/events", {
      name: "x",
      channels: ["a"],
      data: "{}",
    }, { "content-type": "application/json" });
    assert.equal(unsigned.status, 401);

    const channels = await h.pusherRest("GET", "/apps/app-1/channels");
    assert.equal(channels.status, 200);
    assert.deepEqual(channels.body, { channels: {} });

    const stranger = h.pusherSocket("no-such-key");
    const error = await stranger.assertMessage("pusher:error");
    assert.equal(error.data.code, 4001);
    assert.equal(stranger.closed?.code, 4001);
  }));
