// Native load generators for the HTTP and Redis write rows: `wrk` (a C HTTP benchmark, Debian's
// `wrk`; `.ci/bench_deps` installs it) and `redis-benchmark` (Debian's `redis-tools`). A
// generator written in JavaScript saturated its own core before a bare Bun server did here, so
// rows measured with it were bounded by the generator; these are not. Each run reports the
// generator's name and CPU, and the server's CPU time over the run (from /proc), so a row gives
// the server's CPU per write whatever else shares the machine.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findProgram } from "./peers.ts";
import { CpuMeter, cpuSeconds } from "./proc.ts";

/** The HTTP generator the write rows use: wrk when installed (unless BENCH_HTTP_GEN=bun). */
export function httpGenerator(): { name: "wrk" | "bun"; path?: string } {
  if ((Deno.env.get("BENCH_HTTP_GEN") ?? "").toLowerCase() === "bun") return { name: "bun" };
  const path = findProgram("wrk");
  return path ? { name: "wrk", path } : { name: "bun" };
}

/** What one measured generator run gives. */
export interface NativeRun {
  /** Requests completed with a 2xx reply (wrk) / commands answered (redis-benchmark). */
  writes: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
  /** The generator process's CPU share over its run (1.0 = one core). */
  genCpu: number;
  serverCpu: number;
  threadCpu: number;
  machineCpu: number;
  /** Server CPU seconds (process, all threads) per write, in microseconds. */
  serverUsPerWrite: number;
  generator: string;
}

/** Runs `cmd args`, sampling `serverPid` from spawn to exit and the child's own CPU (polled every
 * 50 ms; the last reading before exit). Resolves with stdout and the readings. */
async function measuredRun(
  cmd: string,
  args: string[],
  serverPid: number,
  env: Record<string, string> = {},
) {
  const meter = new CpuMeter(serverPid);
  const server0 = cpuSeconds(serverPid);
  meter.mark("start");
  const started = performance.now();
  const child = spawn(cmd, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...Deno.env.toObject(), ...env },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  child.stderr!.on("data", (c: Uint8Array) => (err += new TextDecoder().decode(c)));
  let genSeconds = 0;
  const poll = setInterval(() => {
    try {
      genSeconds = cpuSeconds(child.pid!);
    } catch { /* exited */ }
  }, 50);
  const code = await new Promise<number | null>((resolve) => {
    child.on("error", (e) => {
      err += `cannot run ${cmd}: ${e.message}`;
      resolve(-1);
    });
    child.on("exit", (c) => resolve(c));
  });
  clearInterval(poll);
  meter.mark("end");
  const wall = (performance.now() - started) / 1000;
  if (code !== 0) {
    throw new Error(`${cmd} failed (exit ${code}): ${err.slice(-1000)} ${out.slice(-500)}`);
  }
  return {
    out,
    wall,
    genCpu: genSeconds / wall,
    meter,
    serverSeconds: cpuSeconds(serverPid) - server0,
  };
}

/** One closed-loop write run over HTTP. */
export interface WrkWrites {
  base: string;
  op: "set" | "increment";
  /** Object path prefix, e.g. `/api/v1/objects/app-1/bench-increment-1`. */
  prefix: string;
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
  valueBytes: number;
  headers: Record<string, string>;
}

/** The wrk script: requests pre-formatted once (one per object), picked at random per request;
 * the summary printed as one JSON line. */
function wrkScript(cfg: WrkWrites): string {
  const pad = "x".repeat(Math.max(0, cfg.valueBytes - 20));
  const body = cfg.op === "set"
    ? JSON.stringify({ value: { n: 1, pad } })
    : JSON.stringify({ slot: "n", by: 1 });
  const method = cfg.op === "set" ? "PUT" : "POST";
  const suffix = cfg.op === "set" ? "/v" : "/increment";
  const headers = Object.entries(cfg.headers).map(([k, v]) =>
    `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`
  ).join("\n");
  return `
wrk.method = ${JSON.stringify(method)}
wrk.body = ${JSON.stringify(body)}
${headers}
local objects = ${cfg.objects}
local reqs = {}
init = function(args)
  if objects == 1 then
    reqs[1] = wrk.format(nil, ${JSON.stringify(cfg.prefix)} .. "/hot" .. ${JSON.stringify(suffix)})
  else
    for i = 0, objects - 1 do reqs[i + 1] = wrk.format(nil, ${
    JSON.stringify(cfg.prefix)
  } .. "/o" .. i .. ${JSON.stringify(suffix)}) end
  end
end
request = function()
  if objects == 1 then return reqs[1] end
  return reqs[math.random(1, objects)]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"us":%d,"errors":%d,"status":%d,"p50":%d,"p99":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
`;
}

/** Runs wrk (1 thread, `concurrency` keep-alive connections) for `warmup` then `seconds`
 * against `serverPid`'s server; the second run is measured. */
export async function wrkWrites(
  wrk: string,
  cfg: WrkWrites,
  serverPid: number,
): Promise<NativeRun> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-wrk-"));
  try {
    const script = join(dir, "writes.lua");
    writeFileSync(script, wrkScript(cfg));
    const args = (
      s: number,
    ) => ["-t1", `-c${cfg.concurrency}`, `-d${s}s`, "--timeout", "10s", "-s", script, cfg.base];
    if (cfg.warmup > 0) {
      await measuredRun(wrk, args(Math.max(1, Math.round(cfg.warmup))), serverPid);
    }
    const run = await measuredRun(wrk, args(cfg.seconds), serverPid);
    const line = run.out.trim().split("\n").filter((l) => l.startsWith("{")).pop();
    if (!line) throw new Error(`wrk printed no summary: ${run.out.slice(-500)}`);
    const r = JSON.parse(line) as {
      requests: number;
      us: number;
      errors: number;
      status: number;
      p50: number;
      p99: number;
    };
    const ok = r.requests - r.status;
    return {
      writes: ok,
      perSecond: ok / (r.us / 1e6),
      p50: r.p50 / 1000,
      p99: r.p99 / 1000,
      errors: r.errors + r.status,
      genCpu: run.genCpu,
      serverCpu: run.meter.share,
      threadCpu: run.meter.thread,
      machineCpu: run.meter.machine,
      serverUsPerWrite: (run.serverSeconds / Math.max(1, ok)) * 1e6,
      generator: "wrk (1 thread)",
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs redis-benchmark (`concurrency` clients, INCR on one key or `objects` random keys) for
 * about `seconds` at `expectedRate` (it runs a fixed count), against the Redis at `port`. */
export async function redisBenchWrites(
  cfg: {
    port: number;
    objects: number;
    concurrency: number;
    seconds: number;
    expectedRate?: number;
  },
  serverPid: number,
): Promise<NativeRun | null> {
  const bin = findProgram("redis-benchmark");
  if (!bin) return null;
  const total = Math.max(1000, Math.round(cfg.seconds * (cfg.expectedRate ?? 60_000)));
  const cmd = cfg.objects === 1 ? ["incr", "hot"] : ["incr", "key:__rand_int__"];
  const args = [
    "-p",
    String(cfg.port),
    "-c",
    String(cfg.concurrency),
    "-n",
    String(total),
    "-r",
    String(cfg.objects),
    "--csv",
    ...cmd,
  ];
  const run = await measuredRun(bin, args, serverPid);
  const row = run.out.trim().split("\n").pop()!.split(",").map((s) => s.replaceAll('"', ""));
  const perSecond = Number(row[1]);
  return {
    writes: total,
    perSecond,
    p50: Number(row[4]),
    p99: Number(row[6]),
    errors: 0,
    genCpu: run.genCpu,
    serverCpu: run.meter.share,
    threadCpu: run.meter.thread,
    machineCpu: run.meter.machine,
    serverUsPerWrite: (run.serverSeconds / total) * 1e6,
    generator: "redis-benchmark",
  };
}
