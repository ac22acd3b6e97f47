import assert from "node:assert/strict";
import client from "prom-client";
import { deferredCounter, deferredHistogram } from "../../lib/metrics/deferred.ts";

Deno.test("deferredCounter(): adds reach the Prometheus text at each scrape and keep accumulating", async () => {
  const registry = new client.Registry();
  const child = deferredCounter(registry, "t_total", "help", ["product"]);
  const a = child({ product: "durable" });
  const b = child({ product: "pubsub" });
  a.inc();
  a.inc(4);
  assert.match(await registry.metrics(), /^t_total\{product="durable"\} 5$/m);
  a.inc(2);
  b.inc();
  const text = await registry.metrics();
  assert.match(text, /^t_total\{product="durable"\} 7$/m);
  assert.match(text, /^t_total\{product="pubsub"\} 1$/m);
});

Deno.test("deferredHistogram(): cumulative buckets, +Inf, sum and count in prom-client's format", async () => {
  const registry = new client.Registry();
  const child = deferredHistogram(registry, "d_seconds", "help", [0.01, 0.1])({ route: "/r" });
  for (const v of [0.005, 0.05, 0.05, 3]) child.observe(v);
  const text = await registry.metrics();
  assert.match(text, /^# TYPE d_seconds histogram$/m);
  assert.match(text, /^d_seconds_bucket\{route="\/r",le="0.01"\} 1$/m);
  assert.match(text, /^d_seconds_bucket\{route="\/r",le="0.1"\} 3$/m);
  assert.match(text, /^d_seconds_bucket\{route="\/r",le="\+Inf"\} 4$/m);
  assert.match(text, /^d_seconds_sum\{route="\/r"\} 3.105$/m);
  assert.match(text, /^d_seconds_count\{route="\/r"\} 4$/m);
});
