// Start: process spawn to the first 200 from /healthz (cold: fresh data dir every time) and
// idle memory (VmRSS one second after ready, no sockets).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APP, ROOT, rssBytes, serverCommand } from "../lib/proc.ts";
import type { BenchContext, BenchReport } from "../lib/report.ts";
import { percentile, round } from "../lib/stats.ts";

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function once(): Promise<{ readyMs: number; rss: number }> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-start-"));
  const appsFile = join(dir, "apps.json");
  writeFileSync(appsFile, JSON.stringify({ apps: [APP] }));
  const port = freePort();
  const { cmd, args } = serverCommand();
  const t0 = performance.now();
  const child = spawn(cmd, [
    ...args,
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--data-dir",
    join(dir, "data"),
    "--apps",
    appsFile,
  ], { cwd: ROOT, stdio: "ignore" });
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  child.on("error", () => {});
  try {
    let readyMs = NaN;
    while (performance.now() - t0 < 30_000) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.arrayBuffer();
        if (res.status === 200) {
          readyMs = performance.now() - t0;
          break;
        }
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 2));
    }
    if (Number.isNaN(readyMs)) throw new Error("server did not become ready within 30 s");
    await new Promise((r) => setTimeout(r, 1000));
    return { readyMs, rss: rssBytes(child.pid!) };
  } finally {
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Measures cold start to ready and idle memory of the server under test. */
export async function start(ctx: BenchContext): Promise<BenchReport> {
  const rounds = ctx.quick ? 2 : 5;
  const runs = [];
  for (let i = 0; i < rounds; i++) runs.push(await once());
  const ready = runs.map((r) => r.readyMs);
  const rss = runs.map((r) => r.rss / 2 ** 20);
  const label = serverCommand().label;
  return {
    name: "start",
    status: "ok",
    columns: ["server", "runs", "ready ms (median)", "ready ms (min)", "idle RSS MB (median)"],
    rows: [[
      label,
      rounds,
      round(percentile(ready, 50), 1),
      round(Math.min(...ready), 1),
      round(percentile(rss, 50), 1),
    ]],
    data: [{
      server: label,
      mode: ctx.mode,
      runs: rounds,
      readyMsMedian: round(percentile(ready, 50), 1),
      readyMsMin: round(Math.min(...ready), 1),
      idleRssMbMedian: round(percentile(rss, 50), 1),
      readyMs: ready.map((x) => round(x, 1)),
    }],
    notes: [
      "spawn to first 200 from GET /healthz, polled every 2 ms; fresh data dir each run (creates the LMDB environment); RSS 1 s after ready with no sockets.",
    ],
  };
}
