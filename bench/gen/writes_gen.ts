// Durable-write load generator (Bun): `concurrency` closed-loop writers issue set (PUT slot)
// or increment (POST /increment) requests on one hot object or spread over `objects` objects.
// Each request is acknowledged by the server only once the write is durable. Each writer holds
// its own keep-alive connection with one request in flight (as the Redis peer's writers do);
// requests go over a raw HTTP/1.1 client, since Bun's fetch saturates the generator's core at
// ~38k requests/s on this machine, below the rates measured here.
import { closedLoop, config, done, log, sleep } from "./common.ts";
import { Http1Conn, Http1Pool } from "./http1.ts";
import { latencySummary, Reservoir } from "../lib/stats.ts";

interface Cfg {
  base: string;
  op: "set" | "increment";
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
  valueBytes: number;
  /** Seconds of an open-loop phase at half the closed-loop rate (0: none). */
  openSeconds?: number;
  /** Skip the closed loop (another generator measured it): the open loop runs at half this. */
  closedRate?: number;
}

const cfg = config<Cfg>();
const headers = {
  "content-type": "application/json",
  "x-app-key": "key1",
  "x-app-secret": "secret1",
};
const pad = "x".repeat(Math.max(0, cfg.valueBytes - 20));
const prefix = `/api/v1/objects/app-1/bench-${cfg.op}-${cfg.objects}`;
let errors = 0;

/** The request of write `n` by writer `w`. */
function request(w: number, n: number): [string, string, string] {
  const obj = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
  return cfg.op === "set"
    ? [`${prefix}/${obj}/v`, "PUT", JSON.stringify({ value: { n, pad } })]
    : [`${prefix}/${obj}/increment`, "POST", JSON.stringify({ slot: "n", by: 1 })];
}

// One keep-alive connection per writer, reopened after a failure.
const conns = await Promise.all(
  Array.from({ length: cfg.closedRate ? 0 : cfg.concurrency }, () => Http1Conn.open(cfg.base)),
);
const closed = cfg.closedRate
  ? { writes: 0, perSecond: cfg.closedRate, p50: NaN, p99: NaN, genCpu: NaN }
  : await closedLoop(cfg, async (w, n) => {
    const [url, method, body] = request(w, n);
    try {
      const res = await conns[w].request(method, url, headers, body);
      if (res.status === 200) return true;
      if (++errors < 5) log(`${method} ${url}: ${res.status} ${res.body}`);
    } catch (e) {
      if (++errors < 5) log(`${method} ${url}: ${e}`);
      await sleep(10);
      conns[w] = await Http1Conn.open(cfg.base);
    }
    return false;
  });
for (const c of conns) c.close();
const { perSecond } = closed;

// Open loop: requests leave on a fixed schedule at half the closed-loop rate, whatever the
// replies do; latency counts from the intended send time (no coordinated omission). Each request
// takes an idle connection, or opens one, so a slow reply never holds back a send.
let open: { openRate: number; openP50: number; openP99: number; openSent: number } | undefined;
if (cfg.openSeconds && perSecond > 0) {
  const rate = perSecond / 2;
  const openLat = new Reservoir();
  const pending: Promise<void>[] = [];
  const conns = new Http1Pool(cfg.base);
  const begin = performance.now();
  let sent = 0;
  while (performance.now() - begin < cfg.openSeconds * 1000) {
    const due = Math.floor(((performance.now() - begin) / 1000) * rate);
    for (; sent < due; sent++) {
      const intended = begin + (sent / rate) * 1000;
      const [url, method, body] = request(sent % 64, 1_000_000 + sent);
      pending.push(
        conns.request(method, url, headers, body).then((res) => {
          if (res.status === 200) openLat.add(performance.now() - intended);
          else if (errors++ < 5) log(`open loop: ${res.status} ${res.body}`);
        }, (e) => void (errors++ < 5 && log(`open loop: ${e}`))),
      );
    }
    await sleep(1);
  }
  await Promise.all(pending);
  conns.close();
  const s = latencySummary(openLat.values);
  open = { openRate: rate, openP50: s.p50, openP99: s.p99, openSent: sent };
}
done({ ...closed, errors, ...open });
