// Redis peer of the replay benchmark (Bun): XADD `count` entries of the same shape to one
// stream (pipelined), then read them back with XRANGE in pages of 1,000, three times; reports
// the median entries/s and the time to the first page.
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { config, done, mark, SelfCpu } from "./common.ts";

interface Cfg {
  port: number;
  count: number;
  valueBytes: number;
}

const cfg = config<Cfg>();
const pad = "x".repeat(Math.max(0, cfg.valueBytes - 20));
const sock = connect(cfg.port, "127.0.0.1");
await new Promise((r) => sock.on("connect", r));
sock.setNoDelay(true);

let buf = Buffer.alloc(0);
let onData: (() => void) | null = null;
sock.on("data", (d: Uint8Array) => {
  buf = Buffer.concat([buf, d]);
  onData?.();
});

const enc = (cmd: string[]) =>
  `*${cmd.length}\r\n${cmd.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;

/** Reads one RESP value at `at`; returns [value, next offset] or null when incomplete. */
function parse(at: number): [unknown, number] | null {
  if (at >= buf.length) return null;
  const end = buf.indexOf("\r\n", at);
  if (end < 0) return null;
  const type = String.fromCharCode(buf[at]);
  const line = buf.toString("utf8", at + 1, end);
  if (type === "+" || type === "-" || type === ":") return [line, end + 2];
  if (type === "$") {
    const n = Number(line);
    if (n < 0) return [null, end + 2];
    if (buf.length < end + 2 + n + 2) return null;
    return [buf.toString("utf8", end + 2, end + 2 + n), end + 2 + n + 2];
  }
  if (type === "*") {
    const n = Number(line);
    const out: unknown[] = [];
    let pos = end + 2;
    for (let i = 0; i < n; i++) {
      const r = parse(pos);
      if (!r) return null;
      out.push(r[0]);
      pos = r[1];
    }
    return [out, pos];
  }
  throw new Error(`unexpected RESP type ${type}`);
}

/** Sends commands (pipelined) and resolves with their replies in order. */
function call(cmds: string[][]): Promise<unknown[]> {
  sock.write(cmds.map(enc).join(""));
  return new Promise((resolve) => {
    const replies: unknown[] = [];
    const drain = () => {
      while (replies.length < cmds.length) {
        const r = parse(0);
        if (!r) return;
        replies.push(r[0]);
        buf = buf.subarray(r[1]);
      }
      onData = null;
      resolve(replies);
    };
    onData = drain;
    drain();
  });
}

for (let i = 0; i < cfg.count; i += 1000) {
  const batch: string[][] = [];
  for (let j = i; j < Math.min(cfg.count, i + 1000); j++) {
    batch.push(["XADD", "replay", "*", "d", JSON.stringify({ n: j, pad })]);
  }
  await call(batch);
}

const cpu = new SelfCpu();
mark("start");
const rounds: { perSecond: number; firstMs: number }[] = [];
// 3 warm-up reads, then 5 timed ones whose median is reported, as for the joins and the raw read.
for (let round = -3; round < 5; round++) {
  const t0 = performance.now();
  let first = 0;
  let n = 0;
  let start = "-";
  while (true) {
    const [page] = await call([["XRANGE", "replay", start, "+", "COUNT", "1000"]]) as [
      [string, string[]][],
    ];
    if (n === 0) first = performance.now() - t0;
    if (page.length === 0) break;
    for (const [, fields] of page) if (fields) n++;
    start = `(${page[page.length - 1][0]}`;
    if (page.length < 1000) break;
  }
  if (n !== cfg.count) throw new Error(`read ${n} of ${cfg.count}`);
  if (round >= 0) rounds.push({ perSecond: n / ((performance.now() - t0) / 1000), firstMs: first });
}
mark("end");
const genCpu = cpu.share();
sock.destroy();
rounds.sort((a, b) => a.perSecond - b.perSecond);
done({
  entries: cfg.count,
  perSecond: rounds[2].perSecond,
  firstEntryMs: rounds[2].firstMs,
  genCpu,
});
