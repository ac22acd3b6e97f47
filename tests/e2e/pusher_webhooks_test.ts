// Pusher-style webhooks: batched, signed so the `pusher` library's webhook check accepts
// them, for events of both protocols, and retried through the durable outbox.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { token } from "../pubsub/helpers.ts";
import { client, type Pusher, serverLib, subscribed } from "../pusher/helpers.ts";

type Event = { name: string; channel: string; [k: string]: unknown };

Deno.test("Pusher webhooks: occupied/vacated, member added/removed, client events; signed, batched, retried", async () => {
  const hook = receiver([500]); // the first delivery fails and must be retried
  const APP: TestApp = {
    id: "app-1",
    key: "key1",
    secret: "secret1",
    webhooks: [{
      url: hook.url,
      event_types: [
        "channel_occupied",
        "channel_vacated",
        "member_added",
        "member_removed",
        "client_event",
      ],
    }],
  };
  const server = await startInProcess({ apps: [APP] });
  const clients: Pusher[] = [];
  const phoenix = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const a = client(server, { user_id: "alice" });
    clients.push(a);
    const ch = await subscribed(a, "presence-room");
    const tok = await token(server, APP, phoenix.socketId, [
      "channel:subscribe:presence-room",
      "channel:presence:presence-room",
    ], "bob");
    assert.equal(
      (await phoenix.join("pubsub:key1:presence-room", {
        auth: tok,
        channel_data: { user_id: "bob" },
      })).status,
      "ok",
    );
    ch.trigger("client-hi", { x: 1 });
    // The server took the client event once the other member (bob) got it.
    await phoenix.waitFor((f) => f[2] === "pubsub:key1:presence-room" && f[3] === "client-hi");
    a.disconnect();
    await phoenix.close();

    const lib = serverLib(server);
    // Deliveries after the first (answered 500); its retry repeats its body exactly, and may
    // arrive after later batches (webhooks are not ordered across batches, as with Pusher).
    let events: Event[] = [];
    // Bounded, generous under load: an attempt that times out (10 s) is retried 0.5, 1, 2, 4,
    // then 30 s after its answer, so a few slow attempts in a row take far more than 30 s.
    const deadline = Date.now() + 180_000;
    while (events.length < 7 && Date.now() < deadline) {
      await hook.waitFor(hook.got.length + 1, Math.max(1, deadline - Date.now()));
      const bodies = [...new Set(hook.got.slice(1).map((d) => d.body))];
      events = bodies.flatMap((body) => JSON.parse(body).events as Event[]);
    }
    for (const d of hook.got) {
      const wh = lib.webhook({ headers: Object.fromEntries(d.headers), rawBody: d.body });
      assert.ok(wh.isValid(), "signed with the app secret, as the pusher library checks");
    }
    const names = events.map((e) => `${e.name}${e.user_id ? `:${e.user_id}` : ""}`);
    assert.deepEqual(names.sort(), [
      "channel_occupied",
      "channel_vacated",
      "client_event:alice",
      "member_added:alice",
      "member_added:bob",
      "member_removed:alice",
      "member_removed:bob",
    ]);
    assert.ok(events.every((e) => e.channel === "presence-room"));
    const client_event = events.find((e) => e.name === "client_event")!;
    assert.equal(client_event.event, "client-hi");
    assert.equal(client_event.data, '{"x":1}');
    assert.match(String(client_event.socket_id), /^\d+\.\d+$/);
    // The first attempt failed (500) and the same body was sent again.
    assert.ok(hook.got.slice(1).some((d) => d.body === hook.got[0].body));
    assert.equal(hook.got[0].headers.get("x-pusher-key"), "key1");
  } finally {
    for (const p of clients) p.disconnect();
    await server.stop();
    await hook.close();
  }
});
