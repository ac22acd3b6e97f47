// Cache channels over a real LMDB log: the cached event is the channel's last stored event
// while it is at most 30 minutes old; cache_miss reports are rate-limited per channel.
import assert from "node:assert/strict";
import { Hub } from "../../lib/hub/hub.ts";
import { CACHE_TTL_MS, isCacheChannel } from "../../lib/pubsub/names.ts";
import { CACHE_MISS_EVERY_MS, ChannelService } from "../../lib/pubsub/service.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { type App, APP_DEFAULTS } from "../../lib/config/apps.ts";
import { tempStore } from "../helpers/temp_store.ts";

const app: App = { id: "a", key: "k", secret: "s", ...APP_DEFAULTS };

Deno.test("isCacheChannel() knows Pusher's four cache prefixes", () => {
  for (const n of ["cache-x", "private-cache-x", "private-encrypted-cache-x", "presence-cache-x"]) {
    assert.ok(isCacheChannel(n), n);
  }
  for (const n of ["x-cache-", "private-x", "presence-x", "cachex", "ephemeral-cache-x"]) {
    assert.ok(!isCacheChannel(n), n);
  }
});

Deno.test("ChannelService.cached(): the last event within 30 minutes, else a miss; misses reported once per 5 s", async () => {
  const { env } = tempStore();
  const realNow = Date.now;
  try {
    const svc = new ChannelService(new OrderedLog(env), new Hub(), {
      historyMaxCount: 1000,
      historyMaxAgeSeconds: 86_400,
      nodeId: "test",
    });
    const stream = svc.stream(app, "cache-a");
    assert.equal(svc.cached(stream, 0), null);
    await svc.publish(app, "cache-a", [{ event: "e", data: 1 }, { event: "e", data: 2 }]);
    const hit = svc.cached(stream, 2);
    assert.deepEqual([hit?.serial, hit?.event, hit?.data], [2, "e", 2]);
    // At the snapshot of an earlier join, the cache is the event at that serial.
    assert.equal(svc.cached(stream, 1)?.data, 1);
    const t0 = realNow();
    Date.now = () => t0 + CACHE_TTL_MS + 1_000;
    assert.equal(svc.cached(stream, 2), null, "older than 30 minutes: a miss");

    const misses: string[] = [];
    svc.onCacheMiss((_app, channel) => {
      misses.push(channel);
    });
    let now = t0;
    Date.now = () => now;
    svc.cacheMiss(app, "cache-b");
    svc.cacheMiss(app, "cache-b");
    svc.cacheMiss(app, "cache-c");
    now += CACHE_MISS_EVERY_MS;
    svc.cacheMiss(app, "cache-b");
    assert.deepEqual(misses, ["cache-b", "cache-c", "cache-b"]);
  } finally {
    Date.now = realNow;
    await env.close();
  }
});
