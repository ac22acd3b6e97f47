// Child processes for the benchmarks: the server under test (source or compiled binary),
// the baseline servers and the load generators, plus /proc readings (RSS, CPU time).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Repository root (bench/..). */
export const ROOT = new URL("../../", import.meta.url).pathname;
/** Bun, installed as an npm package. */
export const BUN = join(ROOT, "node_modules/.bin/bun");
/** The benchmark app: open (no user auth), no practical backend rate cap. */
export const APP = { id: "app-1", key: "key1", secret: "secret1" };
const APPS = {
  apps: [{
    ...APP,
    enable_client_messages: true,
    max_backend_events_per_sec: 1_000_000_000,
    max_client_events_per_sec: 1_000_000_000,
  }],
};

/** A running child listening on a loopback port. */
export interface Served {
  port: number;
  pid: number;
  baseUrl: string;
  /** A WebSocket port other than the HTTP one (the NATS peer). */
  wsPort?: number;
  dataDir?: string;
  output(): string;
  stop(): Promise<void>;
}

/** This Deno, or the npm-installed one when this executable was replaced on disk meanwhile. */
export function denoPath(): string {
  const own = Deno.execPath();
  return existsSync(own) ? own : join(ROOT, "node_modules/.bin/deno");
}

/** The command that runs Switchboard: the compiled binary when SWITCHBOARD_BIN is set. */
export function serverCommand(): { cmd: string; args: string[]; label: string } {
  const bin = Deno.env.get("SWITCHBOARD_BIN");
  if (bin) {
    return { cmd: bin.startsWith("/") ? bin : join(ROOT, bin), args: [], label: `binary ${bin}` };
  }
  return {
    cmd: denoPath(),
    args: ["run", "-A", join(ROOT, "main.ts")],
    label: "source (deno run main.ts)",
  };
}

/** Runtime used for in-process baselines that must match the server's runtime (lmdb raw). */
export function matchingRuntime(): { cmd: string; args: string[]; name: "bun" | "deno" } {
  return Deno.env.get("SWITCHBOARD_BIN")
    ? { cmd: BUN, args: ["run"], name: "bun" }
    : { cmd: denoPath(), args: ["run", "-A"], name: "deno" };
}

/** Starts Switchboard on a random loopback port with a fresh data dir and the bench app. */
export function startSwitchboard(extraArgs: string[] = []): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-bench-"));
  const appsFile = join(dataDir, "apps.json");
  writeFileSync(appsFile, JSON.stringify(APPS));
  const { cmd, args } = serverCommand();
  const all = [
    ...args,
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    join(dataDir, "data"),
    "--apps",
    appsFile,
    "--idle-timeout",
    "3600",
    ...extraArgs,
  ];
  return startListening(cmd, all, /listening on http:\/\/[^:]+:(\d+)/, dataDir);
}

/** Starts a process that prints `listening on http://HOST:PORT` and waits for that line. */
export async function startListening(
  cmd: string,
  args: string[],
  pattern: RegExp,
  dataDir?: string,
): Promise<Served> {
  const child = spawn(cmd, args, {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start:\n${out}`)), 30_000);
    const onData = (chunk: Uint8Array) => {
      out += new TextDecoder().decode(chunk);
      const m = out.match(pattern);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code}:\n${out}`));
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${cmd}: ${e.message}`));
    });
  });
  return {
    port,
    pid: child.pid!,
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir,
    output: () => out,
    stop: async () => {
      await stopChild(child, exited);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function stopChild(child: ChildProcess, exited: Promise<void>) {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/** Starts the bare Bun `server.publish` baseline. */
export function startBunPubsub(): Promise<Served> {
  return startListening(
    BUN,
    ["run", join(ROOT, "bench/baselines/bun_pubsub_server.ts")],
    /listening on http:\/\/[^:]+:(\d+)/,
  );
}

/** Starts the HTTP floor baseline: a bare Bun server answering each request, storing nothing. */
export function startHttpFloor(): Promise<Served> {
  return startListening(
    BUN,
    ["run", join(ROOT, "bench/baselines/http_floor_server.ts")],
    /listening on http:\/\/[^:]+:(\d+)/,
  );
}

/** Starts the npm `ws` broadcast baseline under node. */
export function startWsBroadcast(): Promise<Served> {
  return startListening(
    "node",
    [join(ROOT, "bench/baselines/ws_broadcast_server.mjs")],
    /listening on http:\/\/[^:]+:(\d+)/,
  );
}

/**
 * Starts the core NATS peer (nats-server with a WebSocket listener, plus a Bun publish
 * bridge); rejects when nats-server is not installed.
 */
export async function startNatsPeer(): Promise<Served> {
  const served = await startListening(
    BUN,
    ["run", join(ROOT, "bench/baselines/nats_peer.ts")],
    /listening on http:\/\/[^:]+:(\d+) ws \d+/,
  );
  served.wsPort = Number(served.output().match(/ ws (\d+)/)![1]);
  return served;
}

/** Starts the Socket.IO peer under node. */
export function startSocketIo(): Promise<Served> {
  return startListening(
    "node",
    [join(ROOT, "bench/baselines/socketio_server.mjs")],
    /listening on http:\/\/[^:]+:(\d+)/,
  );
}

/** Which program runs a generator file. */
export type GenRuntime = "bun" | "node" | "deno";

/**
 * Runs a load generator in its own process with `config` (as JSON in BENCH_CONFIG) and
 * resolves with the JSON object it prints as its last stdout line. Progress goes to stderr.
 */
export async function runGenerator<T>(
  runtime: GenRuntime,
  file: string,
  config: unknown,
  onMark?: (name: string) => void,
  timeoutMs = 150_000,
): Promise<T> {
  const path = join(ROOT, "bench", file);
  const [cmd, args] = runtime === "bun"
    ? [BUN, ["run", path]]
    : runtime === "node"
    ? ["node", [path]]
    : [denoPath(), ["run", "-A", path]];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...Deno.env.toObject(), BENCH_CONFIG: JSON.stringify(config), NO_COLOR: "1" },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  let pending = "";
  child.stderr!.on("data", (c: Uint8Array) => {
    const text = new TextDecoder().decode(c);
    err += text;
    // Generators print "@mark NAME" lines at phase edges so the driver can sample the server.
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const l of lines) if (l.startsWith("@mark ")) onMark?.(l.slice(6).trim());
  });
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (e) => {
      err += `cannot run ${cmd}: ${e.message}\n`;
      clearTimeout(timer);
      resolve(-1);
    });
    child.on("exit", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  const last = out.trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (code !== 0 || !last) {
    throw new Error(`${file} failed (exit ${code}):\n${err.slice(-2000)}\n${out.slice(-1000)}`);
  }
  return JSON.parse(last) as T;
}

/** Resident set size of `pid` in bytes (VmRSS from /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)\s+kB/);
  return m ? Number(m[1]) * 1024 : NaN;
}

/** CPU seconds (user + system) used so far by `pid` and its threads, or by its thread `tid`
 * alone. */
export function cpuSeconds(pid: number, tid?: number): number {
  const stat = readFileSync(
    tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`,
    "utf8",
  );
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}

/**
 * Samples a process's CPU between a generator's "start" and "end" marks (1.0 = one core): the
 * whole process, and its main thread alone (the thread whose id is the pid: the JavaScript
 * thread of Bun and Node, Redis's event loop). A single-threaded server is saturated when its
 * main thread is; the whole process also counts the JIT, GC and storage threads.
 */
export class CpuMeter {
  #c0 = 0;
  #th0 = 0;
  #t0 = 0;
  #m0: [number, number] = [0, 0];
  /** The server's CPU share (1.0 = one core). */
  share = NaN;
  /** The server's main thread's CPU share (1.0 = one core). */
  thread = NaN;
  /** Share of the whole machine busy (1.0 = every core), kernel included. */
  machine = NaN;
  constructor(readonly pid: number) {}

  /** Mark handler for `runGenerator`. */
  mark = (name: string): void => {
    if (name === "start") {
      this.#c0 = cpuSeconds(this.pid);
      this.#th0 = cpuSeconds(this.pid, this.pid);
      this.#t0 = performance.now();
      this.#m0 = machineTicks();
    } else if (name === "end" && this.#t0) {
      const seconds = (performance.now() - this.#t0) / 1000;
      this.share = (cpuSeconds(this.pid) - this.#c0) / seconds;
      this.thread = (cpuSeconds(this.pid, this.pid) - this.#th0) / seconds;
      const [busy, total] = machineTicks();
      this.machine = (busy - this.#m0[0]) / Math.max(1, total - this.#m0[1]);
    }
  };
}

/** [busy, total] jiffies over all cores from /proc/stat (idle and iowait are not busy). */
function machineTicks(): [number, number] {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(
    Number,
  );
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return [total - f[3] - f[4], total];
}

/** Soft open-file limit of this process (children inherit it). */
export function openFileLimit(): number {
  const m = readFileSync("/proc/self/limits", "utf8").match(/Max open files\s+(\d+)/);
  return m ? Number(m[1]) : 1024;
}

/** Starts the durable floor baseline (`baselines/durable_floor_server.ts`): Bun.serve and lmdb-js
 * with the store's durability settings, nothing else; `variant` "log" also puts one log entry a
 * write, "shape" puts the log entry and the counter row every 32nd write (the store's shape),
 * "serial" is the store's shape with one commit at a time (as the commit queue runs them). A
 * fresh data dir, removed on stop. */
export function startDurableFloor(
  variant: "counter" | "log" | "shape" | "serial",
): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-durable-floor-"));
  return startListening(
    BUN,
    ["run", join(ROOT, "bench/baselines/durable_floor_server.ts"), "0", variant, dataDir],
    /listening on http:\/\/[^:]+:(\d+)/,
    dataDir,
  );
}
