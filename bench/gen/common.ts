// Shared pieces of the load generators (run under Bun, in their own process): config from
// BENCH_CONFIG, phase marks for the driver, result output, and socket helpers for both the
// Switchboard Phoenix protocol and the bare baselines.
import { latencySummary, Reservoir } from "../lib/stats.ts";

declare const process: {
  env: Record<string, string | undefined>;
  stderr: { write(s: string): void };
  cpuUsage(prev?: { user: number; system: number }): { user: number; system: number };
  exit(code: number): never;
};

/** The generator's config (JSON in BENCH_CONFIG). */
export function config<T>(): T {
  return JSON.parse(process.env.BENCH_CONFIG ?? "{}") as T;
}

/** Tells the driver a phase edge ("start"/"end") so it can sample the server's CPU. */
export function mark(name: string): void {
  process.stderr.write(`@mark ${name}\n`);
}

/** Progress line on stderr (shown by the driver only on failure). */
export function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

/** Prints the result object as the last stdout line. */
export function done(result: unknown): void {
  console.log(JSON.stringify(result));
}

/** CPU meter for this process: share of one core since `start()`. */
export class SelfCpu {
  #u = process.cpuUsage();
  #t = performance.now();
  /** Restarts the meter. */
  start(): void {
    this.#u = process.cpuUsage();
    this.#t = performance.now();
  }
  /** CPU share (1.0 = one core) since start. */
  share(): number {
    const d = process.cpuUsage(this.#u);
    return (d.user + d.system) / 1000 / (performance.now() - this.#t);
  }
}

/** Sleeps `ms`. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Where and how to connect: Switchboard (Phoenix join), Switchboard's Pusher protocol
 * (`/app/{key}`, `pusher:subscribe`) or a bare baseline (`/ws?channel=`).
 */
export interface Target {
  kind: "switchboard" | "pusher" | "socketio" | "nats" | "bare";
  /** http://127.0.0.1:PORT */
  base: string;
  /** The NATS peer's WebSocket port. */
  wsPort?: number;
  appKey?: string;
}

/**
 * Opens a socket subscribed to `channel` and resolves once subscribed (join reply ok for
 * Switchboard, open for bare). `onMessage` gets every later text frame.
 */
export function subscribe(
  target: Target,
  topic: string,
  params: Record<string, unknown>,
  onMessage: (data: string) => void,
): Promise<WebSocket> {
  const ws = target.kind === "switchboard"
    ? new WebSocket(
      `${target.base.replace("http", "ws")}/socket/websocket?app_key=${target.appKey}&vsn=2.0.0`,
    )
    : target.kind === "pusher"
    ? new WebSocket(
      `${target.base.replace("http", "ws")}/app/${target.appKey}?protocol=7&client=bench&version=1`,
    )
    : target.kind === "socketio"
    ? new WebSocket(`${target.base.replace("http", "ws")}/socket.io/?EIO=4&transport=websocket`)
    : target.kind === "nats"
    ? new WebSocket(`ws://127.0.0.1:${target.wsPort}`)
    : new WebSocket(`${target.base.replace("http", "ws")}/ws?channel=${encodeURIComponent(topic)}`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`subscribe ${topic} timed out`)), 30_000);
    ws.onerror = () => reject(new Error(`socket error on ${topic}`));
    ws.onclose = (e) => reject(new Error(`socket closed on ${topic}: ${e.code} ${e.reason}`));
    ws.onopen = () => {
      if (target.kind === "bare") {
        clearTimeout(timer);
        ws.onmessage = (e) => onMessage(e.data as string);
        return resolve(ws);
      }
      // Pusher sockets subscribe once connection_established arrives (below).
      if (target.kind === "switchboard") {
        ws.send(JSON.stringify(["1", "1", topic, "phx_join", params]));
      }
    };
    if (target.kind === "nats") {
      // NATS protocol over the WebSocket (binary frames of protocol text): CONNECT, SUB, then a
      // PING whose PONG says the subscription is in place. Frames may hold several messages
      // or part of one: MSG lines are reassembled and each payload is one delivery.
      ws.binaryType = "arraybuffer";
      const decoder = new TextDecoder();
      let buf = "";
      let ready = false;
      ws.onmessage = (e) => {
        buf += typeof e.data === "string" ? e.data : decoder.decode(e.data as ArrayBuffer);
        while (true) {
          const end = buf.indexOf("\r\n");
          if (end < 0) return;
          const line = buf.slice(0, end);
          if (line.startsWith("MSG ")) {
            const size = Number(line.slice(line.lastIndexOf(" ") + 1));
            if (buf.length < end + 2 + size + 2) return; // the payload is not complete yet
            onMessage(buf.slice(end + 2, end + 2 + size));
            buf = buf.slice(end + 2 + size + 2);
            continue;
          }
          buf = buf.slice(end + 2);
          if (line.startsWith("INFO ")) {
            ws.send(
              `CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nSUB ${topic} 1\r\nPING\r\n`,
            );
          } else if (line === "PING") ws.send("PONG\r\n");
          else if (line === "PONG" && !ready) {
            ready = true;
            clearTimeout(timer);
            resolve(ws);
          }
        }
      };
    }
    if (target.kind === "socketio") {
      // Engine.IO v4 over a raw WebSocket: open (0), connect the namespace (40), join the room;
      // answer pings (2) with pongs (3); events arrive as 42["event", payload].
      ws.onmessage = (e) => {
        const s = e.data as string;
        if (s.startsWith("0{")) ws.send("40");
        else if (s.startsWith("40")) {
          ws.send(`42${JSON.stringify(["join", topic])}`);
          clearTimeout(timer);
          ws.onmessage = (ev) => {
            const m = ev.data as string;
            if (m === "2") ws.send("3");
            else onMessage(m);
          };
          resolve(ws);
        }
      };
    }
    if (target.kind === "pusher") {
      ws.onmessage = (e) => {
        const s = e.data as string;
        if (s.includes('"pusher:connection_established"')) {
          ws.send(
            JSON.stringify({ event: "pusher:subscribe", data: { channel: topic, ...params } }),
          );
        } else if (s.includes('"pusher_internal:subscription_succeeded"')) {
          clearTimeout(timer);
          ws.onmessage = (ev) => onMessage(ev.data as string);
          resolve(ws);
        } else if (s.includes('"pusher:subscription_error"') || s.includes('"pusher:error"')) {
          reject(new Error(`subscribe ${topic} refused: ${s}`));
        }
      };
    }
    if (target.kind === "switchboard") {
      ws.onmessage = (e) => {
        const s = e.data as string;
        if (s.startsWith('["1","1"') && s.includes('"phx_reply"')) {
          clearTimeout(timer);
          if (!s.includes('"status":"ok"')) return reject(new Error(`join ${topic} refused: ${s}`));
          ws.onmessage = (ev) => onMessage(ev.data as string);
          resolve(ws);
        }
      };
    }
  });
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(
  count: number,
  limit: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      out[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  return out;
}

/** Extracts the numeric field `"t":` (send timestamp) from a frame without a full parse. */
export function stamp(s: string): number {
  const i = s.indexOf('"t":');
  if (i >= 0) return parseFloat(s.slice(i + 4, i + 32));
  // Pusher frames carry data as a JSON string: the field is escaped there.
  const j = s.indexOf('\\"t\\":');
  return j < 0 ? NaN : parseFloat(s.slice(j + 6, j + 34));
}

/** The config of a peer's write generator (Redis, JetStream): its port, one hot key or
 * `objects` keys, closed-loop writers and the measured window. */
export interface PeerWriteConfig {
  port: number;
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
}

/** What `closedLoop` measured: completed writes, their rate and latency, and this process's CPU. */
export interface ClosedLoopResult {
  writes: number;
  perSecond: number;
  p50: number;
  p99: number;
  genCpu: number;
}

/**
 * Runs `concurrency` closed-loop writers: each calls `once(writer, n)` again as soon as the
 * previous call settles (`true`: one write done, `false`: it failed and is not counted).
 * After `warmup` seconds, counts writes and their latency for `seconds` (marking the window
 * for the driver's CPU sampling), then stops the writers and waits for them.
 */
export async function closedLoop(
  cfg: { concurrency: number; warmup: number; seconds: number },
  once: (writer: number, n: number) => Promise<boolean>,
): Promise<ClosedLoopResult> {
  const lat = new Reservoir();
  let measuring = false;
  let running = true;
  let count = 0;
  const writer = async (w: number) => {
    for (let n = 0; running; n++) {
      const t0 = performance.now();
      if ((await once(w, n)) && measuring) {
        lat.add(performance.now() - t0);
        count++;
      }
    }
  };
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
  return { writes: count, perSecond: count / elapsed, ...latencySummary(lat.values), genCpu };
}
