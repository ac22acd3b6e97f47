// Webhook entries with `filter` and `headers` (docs/pusher.md "Webhooks"): a filtered webhook
// gets only events of matching channels (a cache channel's `cache_miss` included), an
// unfiltered one gets them all, and custom headers go with every request beside the
// signature the `pusher` library checks.
import assert from "node:assert/strict";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { client, type Pusher, serverLib, subscribed } from "../pusher/helpers.ts";

type Event = { name: string; channel: string; user_id?: string };

Deno.test("webhooks: filter by channel name prefix and suffix, custom headers with every request, signature intact", async () => {
  const caches = receiver();
  const vip = receiver();
  const all = receiver();
  const APP: TestApp = {
    id: "app-1",
    key: "key1",
    secret: "secret1",
    webhooks: [
      {
        url: caches.url,
        event_types: ["channel_occupied", "cache_miss"],
        filter: { channel_name_starts_with: "cache-" },
        headers: { "X-Team": "blue", Authorization: "Bearer hook-token" },
      },
      {
        url: vip.url,
        event_types: ["member_added"],
        filter: { channel_name_starts_with: "presence-", channel_name_ends_with: "-vip" },
      },
      { url: all.url, event_types: ["channel_occupied"] },
    ],
  };
  const server = await startInProcess({ apps: [APP] });
  const clients: Pusher[] = [];
  try {
    const p = client(server, { user_id: "alice" });
    clients.push(p);
    for (const name of ["news", "cache-prices", "presence-lobby", "presence-room-vip"]) {
      await subscribed(p, name);
    }
    const lib = serverLib(server);
    const events = (got: { body: string }[]) =>
      got.flatMap((d) => (JSON.parse(d.body) as { events: Event[] }).events);
    // One event per request: the unfiltered webhook gets four occupied channels.
    await all.waitFor(4, 30_000);
    await caches.waitFor(2, 30_000);
    await vip.waitFor(1, 30_000);
    // Anything a filter let through by mistake would have arrived beside these.
    await new Promise((r) => setTimeout(r, 1000));

    assert.deepEqual(
      events(all.got).map((e) => e.channel).sort(),
      ["cache-prices", "news", "presence-lobby", "presence-room-vip"],
    );
    assert.deepEqual(
      events(caches.got).map((e) => `${e.name} ${e.channel}`).sort(),
      ["cache_miss cache-prices", "channel_occupied cache-prices"],
    );
    assert.deepEqual(events(vip.got), [
      { name: "member_added", channel: "presence-room-vip", user_id: "alice" },
    ]);

    for (const d of caches.got) {
      assert.equal(d.headers.get("x-team"), "blue");
      assert.equal(d.headers.get("authorization"), "Bearer hook-token");
      assert.equal(d.headers.get("content-type"), "application/json");
      assert.equal(d.headers.get("x-pusher-key"), "key1");
      const wh = lib.webhook({ headers: Object.fromEntries(d.headers), rawBody: d.body });
      assert.ok(wh.isValid(), "signed with the app secret, as the pusher library checks");
    }
    for (const d of [...vip.got, ...all.got]) {
      assert.equal(d.headers.get("x-team"), null, "headers belong to their own webhook");
      assert.ok(lib.webhook({ headers: Object.fromEntries(d.headers), rawBody: d.body }).isValid());
    }
  } finally {
    for (const p of clients) p.disconnect();
    await server.stop();
    await caches.close();
    await vip.close();
    await all.close();
  }
});
