// Redis peer of the durable-write benchmark (Bun): `concurrency` closed-loop writers, each on
// its own connection, send INCR to one hot key or across `objects` keys; with
// `appendfsync always` Redis replies only after the write is fsynced, as Switchboard does.
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import { config, done, mark, SelfCpu, sleep } from "./common.ts";
import { latencySummary, Reservoir } from "../lib/stats.ts";

interface Cfg {
  port: number;
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
}

const cfg = config<Cfg>();
const lat = new Reservoir();
let measuring = false;
let running = true;
let count = 0;
let errors = 0;

/** One RESP connection with one command in flight. */
function open(): Promise<{ send(cmd: string[]): Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(cfg.port, "127.0.0.1");
    let buf = "";
    let waiting: ((line: string) => void) | null = null;
    sock.setNoDelay(true);
    sock.on("data", (d: Uint8Array) => {
      buf += new TextDecoder().decode(d);
      const end = buf.indexOf("\r\n");
      if (end >= 0 && waiting) {
        const line = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const w = waiting;
        waiting = null;
        w(line);
      }
    });
    sock.on("error", reject);
    sock.on("connect", () =>
      resolve({
        send: (cmd) =>
          new Promise((r) => {
            waiting = r;
            sock.write(`*${cmd.length}\r\n${cmd.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`);
          }),
        close: () => sock.destroy(),
      })
    );
  });
}

async function writer(w: number) {
  const conn = await open();
  let n = 0;
  while (running) {
    const key = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
    n++;
    const t0 = performance.now();
    const reply = await conn.send(["INCR", key]);
    if (!reply.startsWith(":")) {
      errors++;
      continue;
    }
    if (measuring) {
      lat.add(performance.now() - t0);
      count++;
    }
  }
  conn.close();
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
done({ writes: count, perSecond: count / elapsed, ...latencySummary(lat.values), errors, genCpu });
