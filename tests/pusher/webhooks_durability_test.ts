// In-process checks of what the Pusher webhooks store before a client can observe a change
// (real LMDB in a temp dir): a join waits until its channel_occupied / member_added and their
// records are durable; a client event's webhook is durable before the event is published; a
// join that ends without entering reports the channel closed again; a restart turns the records
// left behind into member_removed / channel_vacated.
import assert from "node:assert/strict";
import { type App, AppRegistry } from "../../lib/config/apps.ts";
import { Hub } from "../../lib/hub/hub.ts";
import { PusherWebhooks } from "../../lib/pusher/webhooks.ts";
import { ChannelService } from "../../lib/pubsub/service.ts";
import { enterChannel } from "../../lib/pubsub/channel.ts";
import type { JoinContext } from "../../lib/socket/handler.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempStore } from "../helpers/temp_store.ts";
import { Topic } from "../../lib/wire/topic.ts";

const APP: App = {
  id: "app-1",
  key: "key1",
  secret: "secret1",
  enable_user_authentication: 0,
  enable_client_messages: true,
  max_client_events_per_sec: 0,
  max_backend_events_per_sec: 0,
  // Nothing listens there: deliveries stay in the outbox.
  webhooks: [{
    url: "http://127.0.0.1:9/hook",
    event_types: [
      "channel_occupied",
      "channel_vacated",
      "member_added",
      "member_removed",
      "client_event",
    ],
  }],
};

function open(env: StoreEnv) {
  const hub = new Hub();
  const svc = new ChannelService(new OrderedLog(env, "pubsub", { staged: true }), hub, {
    historyMaxCount: 100,
    historyMaxAgeSeconds: 3600,
    nodeId: "test",
  });
  const webhooks = new PusherWebhooks(new AppRegistry([APP]), env, hub, svc);
  return { hub, svc, webhooks };
}

/** The stored rows of the Pusher outbox database: deliveries' events and record keys. */
function stored(
  env: StoreEnv,
): { events: { name: string; channel: string; user_id?: string }[]; records: string[] } {
  const db = env.db<{ body: string }>("pusher:outbox");
  const events = [];
  const records = [];
  for (const { key, value } of db.getRange({})) {
    const k = key as (string | number)[];
    if (k[0] === "o") events.push(...JSON.parse(value.body).events);
    else if (k[0] === "l") records.push(`${k[1]}|${k[2]}`);
  }
  return { events, records };
}

Deno.test("Pusher webhooks: a join goes on only once its channel_occupied and member_added are durable", async () => {
  const { env } = tempStore();
  let webhooks: PusherWebhooks | undefined;
  try {
    const opened = open(env);
    webhooks = opened.webhooks;
    const topic = "pubsub:key1:presence-x";
    const entered = await opened.svc.beforeEnter(APP, Topic.parse(topic)!, "u1");
    // Durable now (a write's promise resolves after its commit).
    const names = stored(env).events.map((e) => `${e.name}:${e.user_id ?? ""}`).sort();
    assert.deepEqual(names, ["channel_occupied:", "member_added:u1"]);
    assert.deepEqual(stored(env).records.sort(), [`${topic}|`, `${topic}|u1`]);
    // The join ended without entering (the socket left): the channel is reported closed again.
    entered();
    await webhooks.close();
    webhooks = undefined;
    const after = stored(env);
    assert.deepEqual(after.events.map((e) => e.name).sort(), [
      "channel_occupied",
      "channel_vacated",
      "member_added",
      "member_removed",
    ]);
    assert.deepEqual(after.records, []);
  } finally {
    await webhooks?.close();
    await env.close();
  }
});

Deno.test("Pusher webhooks: a client event's webhook is durable before the event is published", async () => {
  const { env } = tempStore();
  const { svc, webhooks } = open(env);
  try {
    let storedAtPublish: string[] | undefined;
    const origPublish = svc.publish.bind(svc);
    svc.publish = (...args: Parameters<typeof svc.publish>) => {
      storedAtPublish = stored(env).events.map((e) => e.name);
      return origPublish(...args);
    };
    await svc.publishClient(APP, "private-c", {
      event: "client-x",
      data: { a: 1 },
      socket_id: "1.1",
    });
    assert.deepEqual(storedAtPublish, ["client_event"]);
  } finally {
    await webhooks.close();
    await env.close();
  }
});

Deno.test("Pusher webhooks: a restart turns the records a crash left into member_removed and channel_vacated", async () => {
  const { env, path } = tempStore();
  const first = open(env);
  const topic = "pubsub:key1:presence-y";
  await first.svc.beforeEnter(APP, Topic.parse(topic)!, "u2"); // reported; the process then "dies" (no settle)
  await first.webhooks.close();
  await env.close();
  const again = new StoreEnv(path);
  const second = open(again);
  try {
    for (let i = 0; i < 100 && stored(again).records.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const events = stored(again).events.map((e) => `${e.name}:${e.user_id ?? ""}`);
    assert.deepEqual(
      events.slice(2),
      ["member_removed:u2", "channel_vacated:"],
      "members first, then the channel",
    );
    assert.deepEqual(stored(again).records, []);
  } finally {
    await second.webhooks.close();
    await again.close();
  }
});

Deno.test("Pusher webhooks: a cache channel's join replies (with its miss) only once the cache_miss webhook is durable", async () => {
  const { env } = tempStore();
  const hub = new Hub();
  const svc = new ChannelService(new OrderedLog(env, "pubsub", { staged: true }), hub, {
    historyMaxCount: 100,
    historyMaxAgeSeconds: 3600,
    nodeId: "test",
  });
  const app: App = {
    ...APP,
    webhooks: [{ url: "http://127.0.0.1:9/hook", event_types: ["cache_miss"] }],
  };
  const webhooks = new PusherWebhooks(new AppRegistry([app]), env, hub, svc);
  svc.onCacheMiss((a, channel) => webhooks.enqueue(a, { name: "cache_miss", channel }));
  try {
    let storedAtReply: string[] | undefined;
    let reply: Record<string, unknown> | undefined;
    const ctx: JoinContext = {
      app,
      topic: Topic.of("pubsub", "key1", "cache-price"),
      params: {},
      socketId: "1.1",
      verify: () => Promise.resolve(null),
      push: () => {},
      corked: (fn) => fn(),
      accept: (response) => {
        storedAtReply = stored(env).events.map((e) => `${e.name}:${e.channel}`);
        reply = response as Record<string, unknown>;
      },
      subscribe: () => {},
      unsubscribe: () => {},
      close: () => {},
      buffered: () => 0,
      drained: () => Promise.resolve(true),
    };
    assert.equal(await enterChannel(svc, ctx, {}), true);
    assert.equal(reply?.cache, null, "a miss");
    assert.deepEqual(storedAtReply, ["cache_miss:cache-price"]);
  } finally {
    await webhooks.close();
    await env.close();
  }
});
