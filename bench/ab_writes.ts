// Before/after pairs of durable increments: two (or more) Switchboard builds run one after the
// other in each round, each on a fresh server and data dir, with the HTTP floor and Redis
// (`appendfsync always`, redis-benchmark) and the durable floor (Bun.serve + lmdb-js alone,
// `baselines/durable_floor_server.ts`, without and with a log entry) in the same round, all
// driven by wrk. On a shared
// machine writes/s swings with the disk of the moment, so builds are compared within a round.
// Options are environment variables:
//   AB_BINS=/tmp/old,dist/switchboard   builds to compare (a binary, or `bun:main.ts` for source under Bun)
//   AB_ROUNDS=3 AB_SECONDS=5            rounds, and seconds measured per run (after a 1 s warm-up)
//   AB_OBJECTS=1,10000 AB_WRITERS=64    object counts, and wrk connections
//   AB_PEERS=0                          skip the HTTP floor, Redis and the durable floor
//   AB_FLOORS=counter,log,shape         durable floor variants (also: serial; AB_FLOORS= none)
//   AB_ROTATE=1                         start each round's builds one further along the list
//                                       (round 2: the second build first), so no build always
//                                       runs first or last in a round
// Prints one line per run: writes/s, server CPU per write (process, and its JavaScript thread's
// share; the machine's share busy, every core = 100%), writes per commit, commits/s and mean commit ms
// (from the server's /metrics), p99.
//   deno run -A bench/ab_writes.ts
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  APP,
  BUN,
  ROOT,
  type Served,
  startDurableFloor,
  startHttpFloor,
  startListening,
} from "./lib/proc.ts";
import { findProgram, startRedis } from "./lib/peers.ts";
import { redisBenchWrites, wrkWrites } from "./lib/native_gen.ts";

const bins = (Deno.env.get("AB_BINS") ?? "").split(",").filter(Boolean);
const rounds = Number(Deno.env.get("AB_ROUNDS") ?? 3);
const seconds = Number(Deno.env.get("AB_SECONDS") ?? 5);
const shapes = (Deno.env.get("AB_OBJECTS") ?? "1,10000").split(",").map(Number);
const writers = Number(Deno.env.get("AB_WRITERS") ?? 64);
const peers = Deno.env.get("AB_PEERS") !== "0";
const rotate = Deno.env.get("AB_ROTATE") === "1";
const floors = (Deno.env.get("AB_FLOORS") ?? "counter,log,shape").split(",").filter(
  Boolean,
) as ("counter" | "log" | "shape" | "serial")[];
const wrk = findProgram("wrk");
if (!wrk || bins.length === 0) {
  console.error("needs wrk (bash .ci/bench_deps) and AB_BINS=build,build,...");
  Deno.exit(2);
}

/** Starts one build on a random port with a fresh data dir and the bench app. */
function startBuild(bin: string): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-ab-"));
  const appsFile = join(dataDir, "apps.json");
  writeFileSync(
    appsFile,
    JSON.stringify({
      apps: [{ ...APP, max_backend_events_per_sec: 1e9, max_client_events_per_sec: 1e9 }],
    }),
  );
  const args = [
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
  ];
  const listening = /listening on http:\/\/[^:]+:(\d+)/;
  if (bin.startsWith("bun:")) {
    return startListening(BUN, [join(ROOT, bin.slice(4)), ...args], listening, dataDir);
  }
  return startListening(bin.startsWith("/") ? bin : join(ROOT, bin), args, listening, dataDir);
}

/** The server's commit counters and durable appends so far: `timed`, the commits timed in
 * `sum`; `commits`, LMDB transactions where the server counts them apart
 * (`switchboard_lmdb_transactions_total`, since overlapping commits), else the timed ones. */
async function counters(
  base: string,
): Promise<{ sum: number; timed: number; commits: number; appends: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const v = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const timed = v(/^switchboard_lmdb_commit_seconds_count(?:\{[^}]*\})? (\S+)$/m);
  const transactions = v(/^switchboard_lmdb_transactions_total(?:\{[^}]*\})? (\S+)$/m);
  return {
    sum: v(/^switchboard_lmdb_commit_seconds_sum(?:\{[^}]*\})? (\S+)$/m),
    timed,
    commits: Number.isNaN(transactions) ? timed : transactions,
    appends: v(/^switchboard_log_appends_total\{[^}]*product="durable"[^}]*\} (\S+)$/m),
  };
}

const headers = {
  "content-type": "application/json",
  "x-app-key": APP.key,
  "x-app-secret": APP.secret,
};
const f = (x: number, d = 1) => x.toFixed(d);
for (let r = 1; r <= rounds; r++) {
  for (const objects of shapes) {
    const cfg = (base: string, s = seconds) => ({
      base,
      op: "increment" as const,
      prefix: `/api/v1/objects/${APP.id}/ab-${objects}`,
      objects,
      concurrency: writers,
      seconds: s,
      warmup: 0,
      valueBytes: 100,
      headers,
    });
    if (peers) {
      const http = await startHttpFloor();
      const h = await wrkWrites(wrk, cfg(http.baseUrl), http.pid).finally(() => http.stop());
      console.log(
        `round ${r} objects ${objects} http-floor ${f(h.perSecond / 1000)}k/s ${
          f(h.serverUsPerWrite)
        } µs/write`,
      );
      const redis = await startRedis();
      if (redis) {
        const rr = await redisBenchWrites({
          port: redis.port,
          objects,
          concurrency: writers,
          seconds,
          expectedRate: 60_000,
        }, redis.pid).finally(() => redis.stop());
        if (rr) {
          console.log(
            `round ${r} objects ${objects} redis ${f(rr.perSecond / 1000)}k/s ${
              f(rr.serverUsPerWrite)
            } µs/write`,
          );
        }
      }
    }
    const targets: { name: string; start: () => Promise<Served> }[] = [
      ...(peers
        ? floors.map((v) => ({ name: `durable-floor-${v}`, start: () => startDurableFloor(v) }))
        : []),
      ...(rotate
        ? [...bins.slice((r - 1) % bins.length), ...bins.slice(0, (r - 1) % bins.length)]
        : bins)
        .map((bin) => ({ name: bin, start: () => startBuild(bin) })),
    ];
    for (const { name: bin, start } of targets) {
      const s = await start();
      try {
        await wrkWrites(wrk, cfg(s.baseUrl, 1), s.pid);
        const a = await counters(s.baseUrl);
        const w = await wrkWrites(wrk, cfg(s.baseUrl), s.pid);
        const b = await counters(s.baseUrl);
        const commits = b.commits - a.commits;
        const appends = b.appends - a.appends;
        console.log(
          `round ${r} objects ${objects} ${bin} ${f(w.perSecond / 1000)}k/s ${
            f(w.serverUsPerWrite)
          } µs/write ` +
            `(thread ${f(w.threadCpu * 100, 0)}%, process ${f(w.serverCpu * 100, 0)}%, machine ${
              f(w.machineCpu * 100, 0)
            }% of all cores) ${f(appends / commits)} writes/commit ` +
            `${f(commits / (appends / w.perSecond), 0)} commits/s ${
              f(((b.sum - a.sum) * 1000) / (b.timed - a.timed), 2)
            } ms/commit p99 ${f(w.p99)} ms errors ${w.errors}`,
        );
      } finally {
        await s.stop();
      }
    }
  }
}
