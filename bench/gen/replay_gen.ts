// Replay load generator (Bun): preloads `count` entries into one Durable Object (PUTs) or one
// channel (triggers), then joins 3 times to warm up and `rounds` times more with after_log_id /
// after_serial = 0, timing each replay: from sending the join to its reply (entries are pushed
// before the reply).
import { config, done, log, mark, pool, SelfCpu } from "./common.ts";

interface Cfg {
  base: string;
  kind: "object" | "channel";
  count: number;
  rounds: number;
  valueBytes: number;
}

const cfg = config<Cfg>();
const headers = {
  "content-type": "application/json",
  "x-app-key": "key1",
  "x-app-secret": "secret1",
};
const pad = "x".repeat(Math.max(0, cfg.valueBytes - 20));
const id = `r${Date.now()}`;

const t0 = performance.now();
let failures = 0;
await pool(cfg.count, 64, async (n) => {
  const [url, method, body] = cfg.kind === "object"
    ? [
      `${cfg.base}/api/v1/objects/app-1/replay/${id}/v`,
      "PUT",
      JSON.stringify({ value: { n, pad } }),
    ]
    : [
      `${cfg.base}/api/apps/app-1/trigger`,
      "POST",
      JSON.stringify({ channel: id, event: "e", data: { n, pad } }),
    ];
  const res = await fetch(url, { method, headers, body });
  await res.arrayBuffer();
  if (!res.ok && ++failures < 5) log(`preload ${res.status}`);
});
const preloadPerSecond = cfg.count / ((performance.now() - t0) / 1000);
log(`preloaded ${cfg.count} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const topic = cfg.kind === "object" ? `durable:key1:replay:${id}` : `pubsub:key1:${id}`;
const params = cfg.kind === "object"
  ? { app_secret: "secret1", after_log_id: 0 }
  : { after_serial: 0 };

/** One join: resolves with entries received before the reply and the elapsed time. */
function joinOnce(): Promise<{ entries: number; ms: number; firstMs: number; reply: string }> {
  const ws = new WebSocket(
    `${cfg.base.replace("http", "ws")}/socket/websocket?app_key=key1&vsn=2.0.0`,
  );
  return new Promise((resolve, reject) => {
    let entries = 0;
    let start = 0;
    let first = 0;
    const timer = setTimeout(
      () => reject(new Error(`replay timed out after ${entries} entries`)),
      300_000,
    );
    ws.onclose = (e) =>
      reject(new Error(`socket closed after ${entries} entries: ${e.code} ${e.reason}`));
    ws.onmessage = (e) => {
      const s = e.data as string;
      if (s.startsWith('[null,null,"phoenix"')) {
        start = performance.now();
        ws.send(JSON.stringify(["1", "1", topic, "phx_join", params]));
        return;
      }
      if (s.startsWith('["1","1"')) {
        const ms = performance.now() - start;
        clearTimeout(timer);
        ws.onclose = null;
        ws.close();
        return resolve({ entries, ms, firstMs: first - start, reply: s.slice(0, 200) });
      }
      if (entries++ === 0) first = performance.now();
    };
  });
}

// WARMUPS untimed joins (as the baselines' warm-up reads) bring the replay path to its compiled
// steady state; the first, cold, join's time is reported apart. Then `rounds` timed joins.
const WARMUPS = 3;
const cold = await joinOnce();
for (let i = 1; i < WARMUPS; i++) await joinOnce();
const cpu = new SelfCpu();
mark("start");
const runs = [];
for (let i = 0; i < cfg.rounds; i++) runs.push(await joinOnce());
mark("end");
const genCpu = cpu.share();
const rates = runs.map((r) => r.entries / (r.ms / 1000)).sort((a, b) => a - b);
done({
  preloaded: cfg.count,
  preloadFailures: failures,
  preloadPerSecond,
  entries: runs[0].entries,
  bestPerSecond: rates[rates.length - 1],
  medianPerSecond: rates[Math.floor(rates.length / 2)],
  bestMs: Math.min(...runs.map((r) => r.ms)),
  medianMs: runs.map((r) => r.ms).sort((a, b) => a - b)[Math.floor(runs.length / 2)],
  coldMs: cold.ms,
  firstEntryMs: runs.map((r) => r.firstMs).sort((a, b) => a - b)[Math.floor(runs.length / 2)],
  complete: runs.every((r) => r.entries === cfg.count),
  reply: runs[0].reply,
  genCpu,
});
