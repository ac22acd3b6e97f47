// Fan-out load generator (Bun): opens `channels * perChannel` subscriber sockets, then sends
// triggers round-robin over the channels from this same process and measures delivered
// messages/s and trigger-to-receive latency. Flow control: a new trigger is sent only while
// fewer than `window` triggers' worth of deliveries are outstanding, so queues stay bounded
// and latency reflects the server, not an ever-growing backlog. Then a light phase (one trigger
// at a time) and an open-loop phase (triggers on a fixed schedule at half the saturated rate,
// latency from each trigger's intended send time, so a stall shows in full). Triggers go over
// keep-alive HTTP/1.1 connections (bench/gen/http1.ts), cheaper for this process than fetch.
import {
  config,
  done,
  log,
  mark,
  pool,
  SelfCpu,
  sleep,
  stamp,
  subscribe,
  type Target,
} from "./common.ts";
import { Http1Pool } from "./http1.ts";
import { latencySummary, Reservoir } from "../lib/stats.ts";

interface Cfg {
  target: Target;
  channels: number;
  perChannel: number;
  seconds: number;
  warmup: number;
  window: number;
  payloadBytes: number;
  maxHttp: number;
  /** Seconds of a second, light phase: one trigger at a time (latency without queueing). */
  latencySeconds: number;
  /** Seconds of the open-loop phase (0: none). */
  openSeconds?: number;
}

const cfg = config<Cfg>();
const { target } = cfg;
const sampleEvery = Math.max(1, Math.floor((cfg.channels * cfg.perChannel) / 2000));
let received = 0;
let measuring = false;
let windowStart = 0;
let lat = new Reservoir(300_000);
let closed = 0;

const names = Array.from({ length: cfg.channels }, (_, c) => `bench-${c}`);
const topicOf = (
  name: string,
) => (target.kind === "switchboard" ? `pubsub:${target.appKey}:${name}` : name);
const total = cfg.channels * cfg.perChannel;
const t0 = performance.now();
const sockets = await pool(total, 200, async (i) => {
  const sampled = i % sampleEvery === 0;
  const ws = await subscribe(target, topicOf(names[i % cfg.channels]), {}, (s) => {
    const t = stamp(s);
    if (Number.isNaN(t)) return;
    received++;
    if (sampled && measuring && t >= windowStart) lat.add(performance.now() - t);
  });
  ws.onclose = () => closed++;
  return ws;
});
const connectSeconds = (performance.now() - t0) / 1000;
log(`connected ${total} in ${connectSeconds.toFixed(1)} s`);

const peer = target.kind === "bare" || target.kind === "socketio" || target.kind === "nats";
const triggerPath = peer ? "/publish" : "/api/apps/app-1/trigger";
const http = new Http1Pool(target.base);
const headers = {
  "content-type": "application/json",
  "x-app-key": "key1",
  "x-app-secret": "secret1",
};
const pad = "x".repeat(Math.max(0, cfg.payloadBytes - 40));
let expected = 0;
let inflight = 0;
let sent = 0;
let httpErrors = 0;
let running = true;
let wake: (() => void) | undefined;
let budget = cfg.window * cfg.perChannel;
let maxHttp = cfg.maxHttp;

/** Sends trigger `n`, stamped with `t` (its intended send time in the open loop). */
async function trigger(n: number, t = performance.now()) {
  const body = JSON.stringify({
    channel: names[n % cfg.channels],
    event: "bench",
    data: { t, pad },
  });
  inflight++;
  expected += cfg.perChannel;
  try {
    const res = await http.request("POST", triggerPath, headers, body);
    if (res.status !== 200) {
      httpErrors++;
      expected -= cfg.perChannel;
      if (httpErrors < 5) log(`trigger ${res.status}: ${res.body}`);
    }
  } catch (e) {
    httpErrors++;
    expected -= cfg.perChannel;
    if (httpErrors < 5) log(`trigger failed: ${e}`);
  }
  inflight--;
  wake?.();
}

async function driver() {
  while (running) {
    if (inflight < maxHttp && expected - received < budget) {
      void trigger(sent++);
      continue;
    }
    // Wait for an HTTP reply or a short tick (deliveries arrive without a callback here).
    await new Promise<void>((r) => {
      wake = r;
      setTimeout(r, 1);
    });
  }
}

const drive = driver();
await sleep(cfg.warmup * 1000);
const cpu = new SelfCpu();
mark("start");
const r0 = received;
windowStart = performance.now();
measuring = true;
await sleep(cfg.seconds * 1000);
const r1 = received;
const elapsed = (performance.now() - windowStart) / 1000;
mark("end");
const genCpu = cpu.share();
measuring = false;
const loaded = latencySummary(lat.values);
const loadedSamples = lat.seen;
// Light phase: one trigger outstanding at a time, so latency is one fan-out, not a queue.
budget = 1;
maxHttp = 1;
let drainBy = performance.now() + 5000;
while ((inflight > 0 || received < expected) && performance.now() < drainBy) await sleep(10);
lat = new Reservoir(300_000);
windowStart = performance.now();
measuring = true;
await sleep(cfg.latencySeconds * 1000);
measuring = false;
const light = latencySummary(lat.values);
const lightSamples = lat.seen;
running = false;
await drive;

// Open loop: triggers leave on a fixed schedule at half the saturated rate, whatever the
// replies and deliveries do; latency counts from each trigger's intended send time.
let open:
  | { openTriggersPerSecond: number; openP50: number; openP99: number; openSamples: number }
  | undefined;
const saturated = (r1 - r0) / elapsed / cfg.perChannel;
if (cfg.openSeconds && saturated > 0) {
  const rate = saturated / 2;
  drainBy = performance.now() + 5000;
  while ((inflight > 0 || received < expected) && performance.now() < drainBy) await sleep(10);
  lat = new Reservoir(300_000);
  const begin = performance.now();
  windowStart = begin;
  measuring = true;
  let n = 0;
  while (performance.now() - begin < cfg.openSeconds * 1000) {
    const due = Math.floor(((performance.now() - begin) / 1000) * rate);
    for (; n < due; n++) void trigger(sent++, begin + (n / rate) * 1000);
    await sleep(1);
  }
  drainBy = performance.now() + 5000;
  while ((inflight > 0 || received < expected) && performance.now() < drainBy) await sleep(10);
  measuring = false;
  const s = latencySummary(lat.values);
  open = { openTriggersPerSecond: rate, openP50: s.p50, openP99: s.p99, openSamples: lat.seen };
}
drainBy = performance.now() + 5000;
while (inflight > 0 || (received < expected && performance.now() < drainBy)) await sleep(20);
for (const ws of sockets) ws.onclose = null;
for (const ws of sockets) ws.close();
http.close();

done({
  subscribers: total,
  connectSeconds,
  triggers: sent,
  delivered: r1 - r0,
  perSecond: (r1 - r0) / elapsed,
  triggersPerSecond: (r1 - r0) / elapsed / cfg.perChannel,
  ...loaded,
  samples: loadedSamples,
  lightP50: light.p50,
  lightP99: light.p99,
  lightSamples,
  ...open,
  missing: Math.max(0, expected - received),
  httpErrors,
  closedDuringRun: closed,
  genCpu,
});
