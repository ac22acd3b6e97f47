// Token-streaming load generator (Bun): `runs` chat threads, each with one agent streaming
// tokens at `tokensPerSecond` into an active run and `viewers` viewer sockets. Latency is per
// token, from the agent sending it to a viewer receiving the `stream` roll-up that carries it
// (tokens have a fixed length, so a roll-up's offset maps back to token indexes).
import { config, done, log, mark, pool, SelfCpu, sleep } from "./common.ts";

interface Cfg {
  base: string;
  runs: number;
  viewers: number;
  tokensPerSecond: number;
  seconds: number;
  warmup: number;
  tag: string;
  /** How often each agent pushes its due tokens (the agent SDK's TOKEN_FLUSH_MS). */
  tickMs: number;
  /** Runs whose agent shares one socket (one ChatClient serving several threads). */
  runsPerAgentSocket: number;
}

const cfg = config<Cfg>();
const TOKEN = "tok ";
const L = TOKEN.length;
const url = `${cfg.base.replace("http", "ws")}/socket/websocket?app_key=key1&vsn=2.0.0`;

/** Latency histogram in 0.1 ms buckets up to 10 s (exact enough percentiles, O(1) adds). */
const hist = new Uint32Array(100_001);
let histCount = 0;
const addLatency = (ms: number) => {
  hist[Math.min(100_000, Math.max(0, Math.round(ms * 10)))]++;
  histCount++;
};
const pct = (p: number) => {
  const want = Math.ceil((p / 100) * histCount);
  let acc = 0;
  for (let i = 0; i < hist.length; i++) if ((acc += hist[i]) >= want) return i / 10;
  return NaN;
};

/** A minimal Phoenix V2 client: joins, pushes with replies, and a `stream` delta callback. */
class Phx {
  #ws: WebSocket;
  #ref = 0;
  #waiting = new Map<string, (payload: { status: string; response: Record<string, unknown> }) => void>();
  errors = 0;
  closed = false;
  /** Viewers' hot path: a `stream` delta's offset and text length, read without a full parse. */
  onDelta: ((offset: number, length: number) => void) | null = null;
  constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (e) => {
      if (this.onDelta && readDelta(e.data as string, this.onDelta)) return;
      // Agents' hot path: an ok reply to a token push nobody waits for.
      if (this.#waiting.size === 0 && (e.data as string).includes('"phx_reply",{"status":"ok"')) return;
      // Replies settle pushes; other events (run lifecycle, snapshots) are not measured.
      const [, ref, , event, payload] = JSON.parse(e.data as string);
      if (event === "phx_reply") {
        const w = this.#waiting.get(ref);
        if (w) {
          this.#waiting.delete(ref);
          w(payload);
        } else if (payload.status !== "ok") {
          if (++this.errors < 4) log(`push refused: ${JSON.stringify(payload)}`);
        }
      }
    };
    ws.onclose = () => (this.closed = true);
  }
  static open(): Promise<Phx> {
    const ws = new WebSocket(url);
    return new Promise((resolve, reject) => {
      ws.onerror = () => reject(new Error("socket error"));
      ws.onopen = () => resolve(new Phx(ws));
    });
  }
  /** Sends a frame; with `reply` resolves with the reply payload (and throws on error). */
  send(joinRef: string | null, topic: string, event: string, payload: unknown, reply = true) {
    const ref = String(++this.#ref);
    this.#ws.send(JSON.stringify([joinRef ?? ref, ref, topic, event, payload]));
    if (!reply) return Promise.resolve(undefined);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${event} on ${topic}: no reply`)), 20_000);
      this.#waiting.set(ref, (p) => {
        clearTimeout(t);
        if (p.status !== "ok") reject(new Error(`${event} on ${topic}: ${JSON.stringify(p.response)}`));
        else resolve(p.response);
      });
    });
  }
  close() {
    this.#ws.onclose = null;
    this.#ws.close();
  }
}

/**
 * Reads `{"runId":..,"text":"tok ..","offset":n}` of a `stream` frame with string searches (the
 * text is ASCII `tok ` tokens, so it holds no escapes); false for any other frame.
 */
function readDelta(data: string, onDelta: (offset: number, length: number) => void): boolean {
  const at = data.indexOf(',"stream",{');
  if (at < 0) return false;
  const text = data.indexOf('"text":"', at);
  const offset = data.indexOf('"offset":', at);
  if (text < 0 || offset < 0) return false;
  const textEnd = data.indexOf('"', text + 8);
  onDelta(parseInt(data.slice(offset + 9), 10), textEnd - text - 8);
  return true;
}

interface Run {
  topic: string;
  runId: string;
  agent: Phx;
  joinRef: string;
  sent: number;
  sendTimes: Float64Array;
  viewers: Phx[];
  received: number[];
}

const capacity = Math.ceil(cfg.tokensPerSecond * (cfg.seconds + cfg.warmup + 5));
let measureFrom = Infinity;
let measureTo = Infinity;

const agentSockets = new Map<number, Promise<Phx>>();
const agentSocket = (k: number) => {
  let s = agentSockets.get(k);
  if (!s) agentSockets.set(k, s = Phx.open());
  return s;
};

const runs: Run[] = await pool(cfg.runs, 16, async (i) => {
  const topic = `chat:key1:bench-${cfg.tag}-${i}`;
  const runId = `run-${cfg.tag}-${i}`;
  const run: Run = { topic, runId, agent: null as unknown as Phx, joinRef: "", sent: 0, sendTimes: new Float64Array(capacity), viewers: [], received: new Array(cfg.viewers).fill(0) };
  for (let v = 0; v < cfg.viewers; v++) {
    const s = await Phx.open();
    await s.send(null, topic, "phx_join", { client_id: `viewer-${v}` });
    // Each thread has one run, so every delta on a viewer's socket is that run's.
    s.onDelta = (offset, length) => {
      const now = performance.now();
      const first = Math.floor(offset / L);
      const end = Math.floor((offset + length) / L);
      run.received[v] = Math.max(run.received[v], end);
      for (let k = first; k < end; k++) {
        const t = run.sendTimes[k];
        if (t >= measureFrom && t < measureTo) addLatency(now - t);
      }
    };
    run.viewers.push(s);
  }
  await run.viewers[0].send("1", topic, "send", { content: "hello", runId });
  run.agent = await agentSocket(Math.floor(i / cfg.runsPerAgentSocket));
  run.joinRef = `${Date.now()}-${i}`;
  await run.agent.send(run.joinRef, topic, "phx_join", { agent_secret: "secret1", agent_id: "bench-agent" });
  await run.agent.send(run.joinRef, topic, "run:start", { runId });
  return run;
});
log(`${cfg.runs} runs ready`);

// Pacing: every tick (the SDK's TOKEN_FLUSH_MS), each agent sends the tokens due by now in one
// push, the way ChatAgent.token coalesces them. A token's latency runs from its due time (when a
// model would have produced it), so the coalescing delay counts too.
let running = true;
const begin = performance.now();
let behind = 0;
async function pace() {
  while (running) {
    const now = performance.now();
    const due = Math.floor(((now - begin) / 1000) * cfg.tokensPerSecond);
    for (const r of runs) {
      if (due - r.sent > cfg.tokensPerSecond / 10) behind++;
      const upTo = Math.min(due, capacity);
      if (r.sent >= upTo) continue;
      const n = upTo - r.sent;
      for (let k = 0; k < n; k++, r.sent++) r.sendTimes[r.sent] = begin + (r.sent * 1000) / cfg.tokensPerSecond;
      r.agent.send(r.joinRef, r.topic, "token", { runId: r.runId, text: TOKEN.repeat(n) }, false);
    }
    await sleep(cfg.tickMs);
  }
}
const pacing = pace();
await sleep(cfg.warmup * 1000);
const cpu = new SelfCpu();
mark("start");
measureFrom = performance.now();
const sent0 = runs.reduce((a, r) => a + r.sent, 0);
await sleep(cfg.seconds * 1000);
measureTo = performance.now();
const sent1 = runs.reduce((a, r) => a + r.sent, 0);
mark("end");
const genCpu = cpu.share();
running = false;
await pacing;
await sleep(300); // the last roll-ups (40 ms) arrive
let lagging = 0;
for (const r of runs) for (const got of r.received) if (got < r.sent - cfg.tokensPerSecond * 0.2) lagging++;
const agents = await Promise.all(agentSockets.values());
const errors = agents.reduce((a, s) => a + s.errors, 0);
const closed = runs.reduce((a, r) => a + r.viewers.filter((v) => v.closed).length, agents.filter((s) => s.closed).length);
for (const s of agents) s.close();
for (const r of runs) for (const v of r.viewers) v.close();
done({
  runs: cfg.runs,
  tokensPerSecond: (sent1 - sent0) / ((measureTo - measureFrom) / 1000),
  samples: histCount,
  p50: pct(50),
  p99: pct(99),
  max: pct(100),
  laggingViewers: lagging,
  pushErrors: errors,
  closedSockets: closed,
  paceBehindTicks: behind,
  genCpu,
});
