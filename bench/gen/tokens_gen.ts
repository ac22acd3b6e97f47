// Token-streaming load generator (Bun): `runs` chat threads, each with one agent streaming
// tokens at `tokensPerSecond` into an active run and `viewers` viewer sockets. Latency is per
// token (every SAMPLE_EVERY-th), from its due time to a viewer receiving the `stream` roll-up
// that carries it (tokens have a fixed length, so a roll-up's offset maps back to token
// indexes). Sockets are raw (raw_ws.ts), which cost the generator a fraction of the built-in
// WebSocket client per frame, so the server rather than the generator is the limit.
import { config, done, log, mark, pool, SelfCpu, sleep } from "./common.ts";
import { Buffer } from "node:buffer";
import { RawWebSocket } from "./raw_ws.ts";

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
/** Every this many tokens one is timed: a delta's tokens were due at a steady pace, so their
 * latencies are a ramp, and every 4th (2.7 ms apart at 1,500 tokens/s) gives the same
 * percentiles as all of them for a quarter of the generator's work. */
const SAMPLE_EVERY = 4;
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
  #ws: RawWebSocket;
  #ref = 0;
  #waiting = new Map<
    string,
    (payload: { status: string; response: Record<string, unknown> }) => void
  >();
  errors = 0;
  closed = false;
  /** Viewers' hot path: a `stream` delta's offset and text length, read without a full parse. */
  onDelta: ((offset: number, length: number) => void) | null = null;
  constructor(ws: RawWebSocket) {
    this.#ws = ws;
    // Hot paths on the frame's bytes: a viewer's deltas; other events (the roll-ups an agent's
    // socket gets as a thread member, run lifecycle, snapshots), which are not measured; an ok
    // reply to a token push nobody waits for. Other replies are parsed.
    ws.onFrame = (buf, start, end) => {
      if (this.onDelta !== null && readDelta(buf, start, end, this.onDelta)) return true;
      if (!within(buf, REPLY, start, end)) return true;
      return this.#waiting.size === 0 && within(buf, OK_REPLY, start, end);
    };
    ws.onText = (data) => {
      const [, ref, , event, payload] = JSON.parse(data);
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
    ws.onClose = () => (this.closed = true);
  }
  static async open(): Promise<Phx> {
    return new Phx(await RawWebSocket.connect(url));
  }
  /** Sends a frame built around its ref (a push no one waits for; the hot path skips
   * `JSON.stringify`). */
  sendBuilt(build: (ref: number) => string) {
    this.#ws.send(build(++this.#ref));
  }
  /** Sends a frame; resolves with the reply payload (and throws on an error reply). */
  send(joinRef: string | null, topic: string, event: string, payload: unknown) {
    const ref = String(++this.#ref);
    this.#ws.send(JSON.stringify([joinRef ?? ref, ref, topic, event, payload]));
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${event} on ${topic}: no reply`)), 20_000);
      this.#waiting.set(ref, (p) => {
        clearTimeout(t);
        if (p.status !== "ok") {
          reject(new Error(`${event} on ${topic}: ${JSON.stringify(p.response)}`));
        } else resolve(p.response);
      });
    });
  }
  close() {
    this.#ws.close();
  }
}

const STREAM = Buffer.from(',"stream",{');
const TEXT = Buffer.from('"text":"');
const OFFSET = Buffer.from('"offset":');
const REPLY = Buffer.from(',"phx_reply",');
const OK_REPLY = Buffer.from('"phx_reply",{"status":"ok"');

/** Whether `needle` occurs in `buf[start, end)`. */
function within(buf: Buffer, needle: Buffer, start: number, end: number): boolean {
  const at = buf.indexOf(needle, start);
  return at >= 0 && at + needle.length <= end;
}

/**
 * Reads `{"runId":..,"text":"tok ..","offset":n}` of a `stream` frame (`buf[start, end)`) with
 * byte searches (the text is ASCII `tok ` tokens, so it holds no escapes); false for any other
 * frame.
 */
function readDelta(
  buf: Buffer,
  start: number,
  end: number,
  onDelta: (offset: number, length: number) => void,
): boolean {
  const at = buf.indexOf(STREAM, start);
  if (at < 0 || at + STREAM.length > end) return false;
  const text = buf.indexOf(TEXT, at);
  const offset = buf.indexOf(OFFSET, at);
  if (text < 0 || offset < 0 || text >= end || offset >= end) return false;
  const textEnd = buf.indexOf(34, text + 8); // the closing quote
  let n = 0;
  for (let i = offset + 9; i < end && buf[i] >= 48 && buf[i] <= 57; i++) n = n * 10 + buf[i] - 48;
  onDelta(n, textEnd - text - 8);
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
  /** A token frame's text before its ref, and after it up to the tokens (see `pace`). */
  frameHead: string;
  frameTail: string;
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
  const run: Run = {
    topic,
    runId,
    agent: null as unknown as Phx,
    joinRef: "",
    sent: 0,
    sendTimes: new Float64Array(capacity),
    viewers: [],
    received: new Array(cfg.viewers).fill(0),
    frameHead: "",
    frameTail: "",
  };
  for (let v = 0; v < cfg.viewers; v++) {
    const s = await Phx.open();
    await s.send(null, topic, "phx_join", { client_id: `viewer-${v}` });
    // Each thread has one run, so every delta on a viewer's socket is that run's.
    s.onDelta = (offset, length) => {
      const now = performance.now();
      const first = Math.floor(offset / L);
      const end = Math.floor((offset + length) / L);
      run.received[v] = Math.max(run.received[v], end);
      for (let k = Math.ceil(first / SAMPLE_EVERY) * SAMPLE_EVERY; k < end; k += SAMPLE_EVERY) {
        const t = run.sendTimes[k];
        if (t >= measureFrom && t < measureTo) addLatency(now - t);
      }
    };
    run.viewers.push(s);
  }
  await run.viewers[0].send("1", topic, "send", { content: "hello", runId });
  run.agent = await agentSocket(Math.floor(i / cfg.runsPerAgentSocket));
  run.joinRef = `${Date.now()}-${i}`;
  run.frameHead = `${JSON.stringify(run.joinRef)},`;
  run.frameTail = `,${JSON.stringify(topic)},"token",{"runId":${JSON.stringify(runId)},"text":"`;
  await run.agent.send(run.joinRef, topic, "phx_join", {
    agent_secret: "secret1",
    agent_id: "bench-agent",
  });
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
      for (let k = 0; k < n; k++, r.sent++) {
        r.sendTimes[r.sent] = begin + (r.sent * 1000) / cfg.tokensPerSecond;
      }
      // ["joinRef","ref","topic","token",{"runId":"..","text":"tok tok .."}]
      r.agent.sendBuilt((ref) => `[${r.frameHead}"${ref}"${r.frameTail}${TOKEN.repeat(n)}"}]`);
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
for (const r of runs) {
  for (const got of r.received) if (got < r.sent - cfg.tokensPerSecond * 0.2) lagging++;
}
const agents = await Promise.all(agentSockets.values());
const errors = agents.reduce((a, s) => a + s.errors, 0);
const closed = runs.reduce(
  (a, r) => a + r.viewers.filter((v) => v.closed).length,
  agents.filter((s) => s.closed).length,
);
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
