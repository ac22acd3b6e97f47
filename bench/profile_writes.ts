// Profiles durable increments under wrk: the server from source under Bun's sampling profiler
// (`bun --cpu-prof`), 64 wrk connections on 1 or 10k objects, then the samples' self time by
// function (file:line), top first. Options are environment variables:
//   PROF_OBJECTS=1 PROF_SECONDS=8 PROF_TOP=40 PROF_INTERVAL=250 (µs between samples)
//   PROF_MAIN=main.ts                       the entry to profile (another worktree's source too)
//   deno run -A bench/profile_writes.ts
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APP, BUN, ROOT, startListening } from "./lib/proc.ts";
import { findProgram } from "./lib/peers.ts";
import { wrkWrites } from "./lib/native_gen.ts";

const objects = Number(Deno.env.get("PROF_OBJECTS") ?? 1);
const seconds = Number(Deno.env.get("PROF_SECONDS") ?? 8);
const top = Number(Deno.env.get("PROF_TOP") ?? 40);
const interval = Number(Deno.env.get("PROF_INTERVAL") ?? 250);
const entry = Deno.env.get("PROF_MAIN") ?? join(ROOT, "main.ts");
const wrk = findProgram("wrk");
if (!wrk) {
  console.error("needs wrk (bash .ci/bench_deps)");
  Deno.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "sb-prof-"));
const appsFile = join(dir, "apps.json");
writeFileSync(
  appsFile,
  JSON.stringify({
    apps: [{ ...APP, max_backend_events_per_sec: 1e9, max_client_events_per_sec: 1e9 }],
  }),
);
const s = await startListening(BUN, [
  "--cpu-prof",
  `--cpu-prof-dir=${dir}`,
  `--cpu-prof-interval=${interval}`,
  entry,
  ...[
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    join(dir, "data"),
    "--apps",
    appsFile,
    "--idle-timeout",
    "3600",
  ],
], /listening on http:\/\/[^:]+:(\d+)/);
const headers = {
  "content-type": "application/json",
  "x-app-key": APP.key,
  "x-app-secret": APP.secret,
};
const cfg = {
  base: s.baseUrl,
  op: "increment" as const,
  prefix: `/api/v1/objects/${APP.id}/prof-${objects}`,
  objects,
  concurrency: 64,
  seconds,
  warmup: 0,
  valueBytes: 100,
  headers,
};
let run;
try {
  run = await wrkWrites(wrk, cfg, s.pid);
} finally {
  await s.stop();
}
console.log(
  `${(run.perSecond / 1000).toFixed(1)}k writes/s, ${
    run.serverUsPerWrite.toFixed(1)
  } µs/write (server CPU, under the profiler)`,
);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
if (!file) {
  console.error(`no profile in ${dir}`);
  Deno.exit(1);
}
const prof = JSON.parse(readFileSync(join(dir, file), "utf8")) as {
  nodes: Node[];
  samples: number[];
};
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
for (const id of prof.samples) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = url
    ? `${url.replace(ROOT, "").replace(/^file:\/\//, "")}:${lineNumber + 1}`
    : "(native)";
  const name = `${functionName || "(anonymous)"} ${where}`;
  self.set(name, (self.get(name) ?? 0) + 1);
}
const total = prof.samples.length;
console.log(`${total} samples (${join(dir, file)})`);
for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${(100 * n / total).toFixed(1).padStart(5)}%  ${name}`);
}
