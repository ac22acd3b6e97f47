// Benchmark runner: `deno task bench`. Runs each benchmark (servers and load generators in
// their own processes, baselines in the same run), prints a table per benchmark and writes
// bench/results/latest.json.
//   BENCH_ONLY=fanout,writes   run only these (names: fanout writes replay tokens aichat chatjoin connections start cluster)
//   SWITCHBOARD_BIN=dist/switchboard   benchmark the compiled binary instead of `deno run main.ts`
//   BENCH_QUICK=1              about 10x smaller sizes and short windows (smoke run)
import { execSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, serverCommand } from "./lib/proc.ts";
import type { BenchContext, BenchReport } from "./lib/report.ts";
import { table } from "./lib/stats.ts";
import { fanout } from "./benchmarks/fanout.ts";
import { writes } from "./benchmarks/writes.ts";
import { replay } from "./benchmarks/replay.ts";
import { tokens } from "./benchmarks/tokens.ts";
import { connections } from "./benchmarks/connections.ts";
import { start } from "./benchmarks/start.ts";
import { aichat } from "./benchmarks/aichat.ts";
import { chatjoin } from "./benchmarks/chatjoin.ts";
import { cluster } from "./benchmarks/cluster.ts";

const BENCHMARKS: Record<string, (ctx: BenchContext) => Promise<BenchReport>> = {
  start,
  fanout,
  writes,
  replay,
  tokens,
  aichat,
  chatjoin,
  connections,
  cluster,
};

const quick = ["1", "true", "yes"].includes((Deno.env.get("BENCH_QUICK") ?? "").toLowerCase());
const only = (Deno.env.get("BENCH_ONLY") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
for (const name of only) {
  if (!BENCHMARKS[name]) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(BENCHMARKS).join(", ")}`);
    Deno.exit(2);
  }
}
const ctx: BenchContext = {
  quick,
  mode: Deno.env.get("SWITCHBOARD_BIN") ? "binary" : "source",
  size: (n, min = 1) => (quick ? Math.max(min, Math.round(n / 10)) : n),
  seconds: (full, q = Math.max(0.5, full / 4)) => (quick ? q : full),
  log: (msg) => console.log(`  .. ${msg}`),
};

const commit = (() => {
  try {
    return execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
  } catch {
    return "unknown";
  }
})();
console.log(
  `switchboard benchmarks: ${serverCommand().label}, ${
    quick ? "quick" : "full"
  } run, commit ${commit}, ${cpus().length} cores`,
);

const reports: BenchReport[] = [];
const started = performance.now();
for (const [name, fn] of Object.entries(BENCHMARKS)) {
  if (only.length && !only.includes(name)) continue;
  console.log(`\n== ${name}`);
  const t0 = performance.now();
  let report: BenchReport;
  try {
    report = await fn(ctx);
  } catch (e) {
    report = {
      name,
      status: "error",
      columns: [],
      rows: [],
      data: [],
      notes: [`ERROR: ${e instanceof Error ? e.stack ?? e.message : e}`],
    };
  }
  report.seconds = Math.round((performance.now() - t0) / 100) / 10;
  reports.push(report);
  if (report.rows.length) console.log(table(report.columns, report.rows));
  for (const n of report.notes) console.log(`  note: ${n}`);
  console.log(`  (${report.status}, ${report.seconds} s)`);
}

console.log(`\n== summary (${Math.round((performance.now() - started) / 1000)} s)`);
for (const r of reports) console.log(`  ${r.name.padEnd(12)} ${r.status.toUpperCase()}`);

const out = {
  date: new Date().toISOString(),
  commit,
  mode: ctx.mode,
  server: serverCommand().label,
  quick,
  machine: { cores: cpus().length, cpu: cpus()[0]?.model, memoryBytes: totalmem() },
  benchmarks: Object.fromEntries(
    reports.map((
      r,
    ) => [r.name, { status: r.status, seconds: r.seconds, notes: r.notes, results: r.data }]),
  ),
};
mkdirSync(join(ROOT, "bench/results"), { recursive: true });
writeFileSync(join(ROOT, "bench/results/latest.json"), JSON.stringify(out, null, 2) + "\n");
console.log(`results written to bench/results/latest.json`);
// Fail the task when a benchmark crashed (pending is expected while products land).
if (reports.some((r) => r.status === "error")) Deno.exit(1);
