// Cluster load generator (Bun): closed-loop increments spread round-robin over the nodes in
// `bases` (one hot object or `objects` objects), then a fan-out latency phase: one subscriber
// on `subBase`, writes at a fixed rate on `writeBase`, latency from the write's send time to
// its delivery (same process, same clock).
import { closedLoop, config, done, log, sleep, subscribe } from "./common.ts";
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
const headers = {
  "content-type": "application/json",
  "x-app-key": "key1",
  "x-app-secret": "secret1",
};
const prefix = (base: string) =>
  `${base}/api/v1/objects/app-1/bench-cluster-${cfg.tag}-${cfg.objects}`;
let errors = 0;

const writes = await closedLoop(cfg, async (w, n) => {
  const base = cfg.bases[w % cfg.bases.length];
  const obj = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
  try {
    const res = await fetch(`${prefix(base)}/${obj}/increment`, {
      method: "POST",
      headers,
      body: '{"slot":"n"}',
    });
    await res.arrayBuffer();
    if (res.ok) return true;
    if (++errors < 5) log(`increment: ${res.status}`);
  } catch (e) {
    if (++errors < 5) log(`increment: ${e}`);
    await sleep(10);
  }
  return false;
});

let fan: { fanP50: number; fanP99: number; fanCount: number } | undefined;
if (cfg.fanRate > 0) {
  const sent = new Map<number, number>();
  const fanLat = new Reservoir();
  const topic = `durable:key1:bench-fan-${cfg.tag}:f`;
  const ws = await subscribe({ kind: "switchboard", base: cfg.subBase, appKey: "key1" }, topic, {
    app_secret: "secret1",
  }, (data) => {
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
    pending.push(
      fetch(url, { method: "PUT", headers, body: JSON.stringify({ value: i }) }).then((r) =>
        r.arrayBuffer()
      ),
    );
  }
  await Promise.all(pending);
  await sleep(300);
  ws.close();
  const s = latencySummary(fanLat.values);
  fan = { fanP50: s.p50, fanP99: s.p99, fanCount: fanLat.values.length };
}

done({
  writes: writes.writes,
  perSecond: writes.perSecond,
  p50: writes.p50,
  p99: writes.p99,
  errors,
  genCpu: writes.genCpu,
  ...fan,
});
