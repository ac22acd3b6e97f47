// Cluster load generator (Bun): closed-loop increments spread round-robin over the nodes in
// `bases` (one hot object or `objects` objects), then a fan-out latency phase: one subscriber
// on `subBase`, writes at a fixed rate on `writeBase`, latency from the write's send time to
// its delivery (same process, same clock).
import { config, done, log, mark, SelfCpu, sleep, subscribe } from "./common.ts";
import { latencySummary, Reservoir } from "../lib/stats.ts";

interface Cfg {
  bases: string[];
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
  /** Fan-out phase: writes per second and seconds (0: none). */
  fanRate: number;
  fanSeconds: number;
  writeBase: string;
  subBase: string;
  tag: string;
}

const cfg = config<Cfg>();
const headers = { "content-type": "application/json", "x-app-key": "key1", "x-app-secret": "secret1" };
const prefix = (base: string) => `${base}/api/v1/objects/app-1/bench-cluster-${cfg.tag}-${cfg.objects}`;
const lat = new Reservoir();
let measuring = false;
let running = true;
let count = 0;
let errors = 0;

async function writer(w: number) {
  const base = cfg.bases[w % cfg.bases.length];
  let n = 0;
  while (running) {
    const obj = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n++ * 104729) % cfg.objects}`;
    const t0 = performance.now();
    try {
      const res = await fetch(`${prefix(base)}/${obj}/increment`, { method: "POST", headers, body: '{"slot":"n"}' });
      await res.arrayBuffer();
      if (!res.ok) {
        if (++errors < 5) log(`increment: ${res.status}`);
        continue;
      }
    } catch (e) {
      if (++errors < 5) log(`increment: ${e}`);
      await sleep(10);
      continue;
    }
    if (measuring) {
      lat.add(performance.now() - t0);
      count++;
    }
  }
}

const writers = Array.from({ length: cfg.concurrency }, (_, w) => writer(w));
await sleep(cfg.warmup * 1000);
const cpu = new SelfCpu();
mark("start");
const t0 = performance.now();
measuring = true;
await sleep(cfg.seconds * 1000);
measuring = false;
const elapsed = (performance.now() - t0) / 1000;
mark("end");
const genCpu = cpu.share();
running = false;
await Promise.all(writers);
const writeLat = latencySummary(lat.values);

let fan: { fanP50: number; fanP99: number; fanCount: number } | undefined;
if (cfg.fanRate > 0) {
  const sent = new Map<number, number>();
  const fanLat = new Reservoir();
  const topic = `durable:key1:bench-fan-${cfg.tag}:f`;
  const ws = await subscribe({ kind: "switchboard", base: cfg.subBase, appKey: "key1" }, topic, { app_secret: "secret1" }, (data) => {
    const [, , , event, payload] = JSON.parse(data);
    if (event !== "change") return;
    const at = sent.get(payload.value);
    if (at !== undefined) fanLat.add(performance.now() - at);
  });
  const url = `${cfg.writeBase}/api/v1/objects/app-1/bench-fan-${cfg.tag}/f/v`;
  const begin = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; performance.now() - begin < cfg.fanSeconds * 1000; i++) {
    const due = begin + (i / cfg.fanRate) * 1000;
    if (due > performance.now()) await sleep(due - performance.now());
    sent.set(i, performance.now());
    pending.push(fetch(url, { method: "PUT", headers, body: JSON.stringify({ value: i }) }).then((r) => r.arrayBuffer()));
  }
  await Promise.all(pending);
  await sleep(300);
  ws.close();
  const s = latencySummary(fanLat.values);
  fan = { fanP50: s.p50, fanP99: s.p99, fanCount: fanLat.values.length };
}

done({ perSecond: count / elapsed, p50: writeLat.p50, p99: writeLat.p99, errors, genCpu, ...fan });
