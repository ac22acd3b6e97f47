// Durable writes: set and increment on one hot object and on many objects, 1, 8, 64 and 256
// concurrent writers, each acknowledged only when durable. Baselines and peers run interleaved
// with the server, cell by cell (same objects and writers), and the 64-writer cells three times
// (medians): raw awaited lmdb-js puts, the same-shape floor, the HTTP floor (a bare Bun server
// answering the same requests, storing nothing), the durable floor (Bun.serve + lmdb-js with
// the store's durability settings and nothing else: a counter, a counter and a log entry, and
// the store's shape of a log entry and a checkpoint every 32nd write),
// Redis INCR with appendfsync always, and JetStream publishes (not durable on Debian's
// nats-server 2.9).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  APP,
  CpuMeter,
  matchingRuntime,
  runGenerator,
  startDurableFloor,
  startHttpFloor,
  startSwitchboard,
} from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";
import { type Peer, startJetStream, startRedis } from "../lib/peers.ts";
import { httpGenerator, redisBenchWrites, wrkWrites } from "../lib/native_gen.ts";

/** One run of the store alone (`baselines/objects_in_process.ts`): no HTTP. */
interface StoreAlone {
  writers: number;
  perSecond: number;
  writesPerCommit: number;
  processUsPerWrite: number;
  threadUsPerWrite: number;
}

interface WriteResult {
  perSecond: number;
  p50: number;
  p99: number;
  openRate?: number;
  openP50?: number;
  openP99?: number;
  errors?: number;
  genCpu?: number;
  serverCpu?: number;
  /** The server's main thread (Switchboard's JavaScript thread, Redis's event loop). */
  threadCpu?: number;
  machineCpu?: number;
  /** Switchboard only: commits in the closed-loop window, entries per commit, mean ms each. */
  commits?: number;
  writesPerCommit?: number;
  commitMs?: number;
  /** Switchboard only: commits a second over the closed-loop window. */
  commitsPerSecond?: number;
  /** Which generator ran (wrk, redis-benchmark or a Bun generator). */
  generator?: string;
  /** Server CPU (process, all threads) per write, in microseconds. */
  serverUsPerWrite?: number;
}

/** Switchboard's commit and append counters so far, from its `/metrics`. */
async function commitCounters(
  base: string,
): Promise<{ commits: number; timed: number; seconds: number; appends: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const timed = value(/^switchboard_lmdb_commit_seconds_count(?:\{[^}]*\})? (\S+)$/m);
  const transactions = value(/^switchboard_lmdb_transactions_total(?:\{[^}]*\})? (\S+)$/m);
  return {
    // LMDB transactions where the server counts them apart (overlapping commits), else the timed commits.
    commits: Number.isNaN(transactions) ? timed : transactions,
    timed,
    seconds: value(/^switchboard_lmdb_commit_seconds_sum(?:\{[^}]*\})? (\S+)$/m),
    appends: value(/^switchboard_log_appends_total\{[^}]*product="durable"[^}]*\} (\S+)$/m),
  };
}

/** The run with the median rate of `runs` (the one run itself when there is one). */
function median(runs: WriteResult[]): WriteResult {
  return [...runs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(runs.length / 2)];
}

/** Runs the durable-write matrix with its baselines and peers interleaved. */
export async function writes(ctx: BenchContext): Promise<BenchReport> {
  const seconds = ctx.seconds(3, 1);
  const warmup = ctx.seconds(0.5, 0.3);
  const valueBytes = 100;
  const many = ctx.size(10000);
  // Growth curve in writers: 1, 8, 64, 256.
  // BENCH_WRITERS=64 (a comma list) runs only those writer counts.
  const writersOnly = (Deno.env.get("BENCH_WRITERS") ?? "").split(",").map(Number).filter((n) =>
    n > 0
  );
  const concurrencies = writersOnly.length
    ? writersOnly
    : ctx.quick
    ? [1, 64, 256]
    : [1, 8, 64, 256];
  const rt = matchingRuntime();
  const notes: string[] = [];

  const probe = await startSwitchboard();
  const available = await routeExists(
    probe.baseUrl,
    "PUT",
    `/api/v1/objects/${APP.id}/probe/probe/v`,
    { value: 1 },
  );
  await probe.stop();
  if (!available) return pending("writes", "Durable Objects HTTP API is not available yet");
  const startPeer = async (name: string, start: () => Promise<Peer | null>, install: string) => {
    const peer = await start().catch((e) => {
      notes.push(`${name} did not start: ${String(e).slice(0, 200)}`);
      return null;
    });
    if (!peer) {
      notes.push(
        `${name} peer missing: install it (Debian: apt-get install ${install}) for its rows.`,
      );
    }
    return peer;
  };
  const gen = httpGenerator();
  if (gen.name === "bun") {
    notes.push(
      "wrk is not installed (.ci/bench_deps installs it): HTTP rows use the Bun generator (bench/gen/writes_gen.ts), which saturates its core near the rates measured here; those rows are lower bounds.",
    );
  }
  const http = await startHttpFloor();
  const redis = await startPeer("redis-server", startRedis, "redis-server");
  const jetstream = await startPeer("nats-server", startJetStream, "nats-server");

  /** One run of a generator against a process whose CPU is sampled; with `metrics` (a
   * Switchboard's base URL), its commits over the closed-loop window too. */
  const measured = async (
    pid: number,
    file: string,
    cfg: Record<string, unknown>,
    metrics?: string,
  ): Promise<WriteResult> => {
    if (file === "gen/writes_gen.ts" && gen.name === "wrk") return measuredWrk(pid, cfg, metrics);
    if (file === "gen/redis_writes_gen.ts") {
      const r = await redisBenchWrites(
        cfg as { port: number; objects: number; concurrency: number; seconds: number },
        pid,
      );
      if (r) return r;
    }
    const meter = new CpuMeter(pid);
    const scrapes: ReturnType<typeof commitCounters>[] = [];
    const r = await runGenerator<WriteResult>("bun", file, cfg, (name) => {
      meter.mark(name);
      if (metrics && (name === "start" || name === "end")) scrapes.push(commitCounters(metrics));
    });
    const generator = file === "gen/redis_writes_gen.ts"
      ? "bun (RESP)"
      : file === "gen/jetstream_writes_gen.ts"
      ? "bun (nats.js)"
      : "bun (http1.ts)";
    const result = {
      ...r,
      generator,
      serverCpu: meter.share,
      threadCpu: meter.thread,
      machineCpu: meter.machine,
      serverUsPerWrite: (meter.share / r.perSecond) * 1e6,
    };
    if (scrapes.length !== 2) return result;
    const [a, b] = await Promise.all(scrapes);
    return withCommits(result, a, b);
  };
  /** `r` with the commits between two scrapes of `/metrics` (writes per commit, commit ms,
   * commits a second over the window the run's writes took). */
  const withCommits = (
    r: WriteResult,
    a: Awaited<ReturnType<typeof commitCounters>>,
    b: Awaited<ReturnType<typeof commitCounters>>,
  ): WriteResult => {
    const commits = b.commits - a.commits;
    const appends = b.appends - a.appends;
    const windowSeconds = appends / r.perSecond;
    return {
      ...r,
      commits,
      writesPerCommit: appends / commits,
      commitMs: ((b.seconds - a.seconds) * 1000) / (b.timed - a.timed),
      commitsPerSecond: commits / windowSeconds,
    };
  };
  /** A closed-loop HTTP run with wrk; the open-loop phase (when asked) from the Bun generator
   * at half wrk's rate. */
  const measuredWrk = async (
    pid: number,
    cfg: Record<string, unknown>,
    metrics?: string,
  ): Promise<WriteResult> => {
    const c = cfg as {
      base: string;
      op: "set" | "increment";
      objects: number;
      concurrency: number;
      seconds: number;
      warmup: number;
      valueBytes: number;
      openSeconds?: number;
    };
    const headers = {
      "content-type": "application/json",
      "x-app-key": APP.key,
      "x-app-secret": APP.secret,
    };
    const prefix = `/api/v1/objects/${APP.id}/bench-${c.op}-${c.objects}`;
    // Warm up first, so the scrapes bracket only the measured run.
    const warm = { ...c, prefix, headers, seconds: Math.max(1, Math.round(c.warmup)), warmup: 0 };
    if (c.warmup > 0) await wrkWrites(gen.path!, warm, pid);
    const a = metrics ? await commitCounters(metrics) : undefined;
    const r: WriteResult = await wrkWrites(gen.path!, { ...c, prefix, headers, warmup: 0 }, pid);
    const withC = a && metrics ? withCommits(r, a, await commitCounters(metrics)) : r;
    if (!c.openSeconds || !(r.perSecond > 0)) return withC;
    const open = await runGenerator<WriteResult>("bun", "gen/writes_gen.ts", {
      ...cfg,
      closedRate: r.perSecond,
    });
    return {
      ...withC,
      openRate: open.openRate,
      openP50: open.openP50,
      openP99: open.openP99,
      errors: (withC.errors ?? 0) + (open.errors ?? 0),
    };
  };
  /** Server CPU per write in µs (one decimal), or null when not measured. */
  const usPerWrite = (r: WriteResult) =>
    r.serverUsPerWrite === undefined || !Number.isFinite(r.serverUsPerWrite)
      ? null
      : round(r.serverUsPerWrite, 1);
  /** What held a Switchboard cell back: a saturated core, else its writers waiting on commits. */
  const limitOf = (r: WriteResult) => {
    const limit = bottleneck(r.genCpu ?? 0, r.threadCpu!, r.machineCpu);
    return limit === "-" && r.commits ? "commits" : limit;
  };
  /** One run of the raw lmdb-js baseline in `mode`, on a fresh data dir. */
  const rawRun = async (mode: "writes" | "shape", objects: number, concurrency: number) => {
    const dir = mkdtempSync(join(tmpdir(), "sb-bench-raw-"));
    try {
      return await runGenerator<WriteResult>(rt.name, "baselines/lmdb_raw.ts", {
        mode,
        dir,
        concurrency,
        seconds,
        warmup,
        objects,
        valueBytes,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  const columns = [
    "op",
    "objects",
    "writers",
    "runs",
    "writes/s",
    "p50 ms",
    "p99 ms",
    "raw writes/s",
    "ratio",
    "vs floor",
    "vs http floor",
    "vs redis",
    "vs jetstream*",
    "open-loop p50/p99 ms @ rate",
    "writes / commit",
    "commit ms",
    "server cpu",
    "main thread",
    "machine",
    "limit",
    "server µs/write",
    "commits/s",
    "generator",
    "gen cpu",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  try {
    for (const objects of [1, many]) {
      for (const concurrency of concurrencies) {
        const reps = concurrency === 64 && !ctx.quick ? 3 : 1;
        const runs: Record<string, WriteResult[]> = {
          raw: [],
          floor: [],
          http: [],
          redis: [],
          jetstream: [],
          set: [],
          increment: [],
          "durable-counter": [],
          "durable-log": [],
          "durable-shape": [],
        };
        // The store alone at the cell's writers and, from 64 writers, at half of them (a commit
        // of the size the server's HTTP writers settle at: two groups that alternate).
        const alone: StoreAlone[][] = [[], []];
        const aloneWriters = concurrency >= 64 ? [concurrency, concurrency / 2] : [concurrency];
        for (let rep = 0; rep < reps; rep++) {
          ctx.log(
            `objects=${objects} writers=${concurrency} run ${
              rep + 1
            }/${reps}: raw, floor, peers, server`,
          );
          runs.raw.push(await rawRun("writes", objects, concurrency));
          runs.floor.push(await rawRun("shape", objects, concurrency));
          const peerCfg = { objects, concurrency, seconds, warmup };
          runs.http.push(
            await measured(http.pid, "gen/writes_gen.ts", {
              ...peerCfg,
              base: http.baseUrl,
              op: "increment",
              valueBytes,
            }),
          );
          if (redis) {
            runs.redis.push(
              await measured(redis.pid, "gen/redis_writes_gen.ts", {
                ...peerCfg,
                port: redis.port,
                expectedRate: concurrency === 1 ? 4000 : 60_000,
              }),
            );
          }
          if (jetstream) {
            runs.jetstream.push(
              await measured(jetstream.pid, "gen/jetstream_writes_gen.ts", {
                ...peerCfg,
                port: jetstream.port,
              }),
            );
          }
          // The durable floor: a fresh server and data dir per run, as Switchboard's.
          for (const variant of ["counter", "log", "shape"] as const) {
            const floorServer = await startDurableFloor(variant);
            try {
              runs[`durable-${variant}`].push(
                await measured(floorServer.pid, "gen/writes_gen.ts", {
                  ...peerCfg,
                  base: floorServer.baseUrl,
                  op: "increment",
                  valueBytes,
                }, floorServer.baseUrl),
              );
            } finally {
              await floorServer.stop();
            }
          }
          for (const [i, writers] of aloneWriters.entries()) {
            alone[i].push(
              await runGenerator<StoreAlone>("bun", "baselines/objects_in_process.ts", {
                objects,
                writers,
                seconds,
                warmup,
              }),
            );
          }
          for (const op of ["set", "increment"] as const) {
            const openSeconds = concurrency === 64 && rep === 0 ? ctx.seconds(2, 1) : 0;
            // A fresh server and data dir per run, as each raw and floor run gets a fresh dir.
            const server = await startSwitchboard();
            try {
              runs[op].push(
                await measured(server.pid, "gen/writes_gen.ts", {
                  ...peerCfg,
                  base: server.baseUrl,
                  op,
                  valueBytes,
                  openSeconds,
                }, server.baseUrl),
              );
            } finally {
              await server.stop();
            }
          }
        }
        const [raw, floor, bare, peer, js] = [
          median(runs.raw),
          median(runs.floor),
          median(runs.http),
          runs.redis.length ? median(runs.redis) : undefined,
          runs.jetstream.length ? median(runs.jetstream) : undefined,
        ];
        const cell = { objects, writers: concurrency, runs: reps };
        rows.push([
          "lmdb same-shape txn",
          objects,
          concurrency,
          reps,
          floor.perSecond,
          floor.p50,
          floor.p99,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          "in process",
          null,
        ]);
        data.push({
          op: "lmdb same-shape transaction (floor)",
          runtime: rt.name,
          ...cell,
          writesPerSecond: round(floor.perSecond),
          p50Ms: floor.p50,
          p99Ms: floor.p99,
        });
        /** A peer's row and record; `thread`: its main thread is what saturates (not so for
         * JetStream, whose process figure is shown instead). */
        const peerRow = (
          name: string,
          op: string,
          r: WriteResult,
          thread: boolean,
          extra: Record<string, unknown> = {},
        ) => {
          const limit = bottleneck(
            r.genCpu ?? 0,
            thread ? r.threadCpu! : r.serverCpu!,
            r.machineCpu,
          );
          rows.push([
            name,
            objects,
            concurrency,
            reps,
            r.perSecond,
            r.p50,
            r.p99,
            ...Array(9).fill(null),
            pct(r.serverCpu!),
            thread ? pct(r.threadCpu!) : null,
            pct(r.machineCpu!),
            limit,
            usPerWrite(r),
            null,
            r.generator ?? null,
            pct(r.genCpu ?? NaN),
          ]);
          data.push({
            op,
            ...cell,
            writesPerSecond: round(r.perSecond),
            p50Ms: r.p50,
            p99Ms: r.p99,
            serverCpu: round(r.serverCpu!, 2),
            mainThreadCpu: thread ? round(r.threadCpu!, 2) : undefined,
            generator: r.generator,
            generatorCpu: round(r.genCpu ?? 0, 2),
            serverMicrosecondsPerWrite: usPerWrite(r) ?? undefined,
            ...extra,
          });
        };
        for (const runsAlone of alone.filter((a) => a.length > 0)) {
          const r = [...runsAlone].sort((a, b) =>
            a.perSecond - b.perSecond
          )[Math.floor(runsAlone.length / 2)];
          rows.push([
            `store alone, ${r.writers} writers (in process, no HTTP)`,
            objects,
            concurrency,
            reps,
            r.perSecond,
            ...Array(9).fill(null),
            round(r.writesPerCommit, 1),
            null,
            null,
            null,
            null,
            null,
            round(r.processUsPerWrite, 1),
            Math.round(r.perSecond / r.writesPerCommit),
            "in process (bun)",
            null,
          ]);
          data.push({
            op: "store alone (ObjectStore.write increments in one Bun process, no HTTP)",
            ...cell,
            storeWriters: r.writers,
            writesPerSecond: round(r.perSecond),
            writesPerCommit: round(r.writesPerCommit, 1),
            serverMicrosecondsPerWrite: round(r.processUsPerWrite, 1),
            threadMicrosecondsPerWrite: round(r.threadUsPerWrite, 1),
            allRunsPerSecond: runsAlone.map((x) =>
              round(x.perSecond)
            ),
          });
        }
        peerRow(
          "http floor (no storage)",
          "http floor (bare Bun server, same requests, no storage)",
          bare,
          true,
          { ratioToRedis: peer ? round(bare.perSecond / peer.perSecond, 3) : undefined },
        );
        for (const variant of ["counter", "log", "shape"] as const) {
          const r = median(runs[`durable-${variant}`]);
          const name = `durable floor (Bun.serve + lmdb-js, ${
            variant === "counter"
              ? "counter"
              : variant === "log"
              ? "counter + log entry"
              : "log entry + counter every 32nd"
          })`;
          const limit = limitOf(r);
          rows.push([
            name,
            objects,
            concurrency,
            reps,
            r.perSecond,
            r.p50,
            r.p99,
            ...Array(4).fill(null),
            peer ? round(r.perSecond / peer.perSecond, 3) : null,
            null,
            null,
            r.writesPerCommit === undefined ? null : round(r.writesPerCommit, 1),
            r.commitMs === undefined ? null : round(r.commitMs, 2),
            pct(r.serverCpu!),
            pct(r.threadCpu!),
            pct(r.machineCpu!),
            limit,
            usPerWrite(r),
            r.commitsPerSecond === undefined ? null : Math.round(r.commitsPerSecond),
            r.generator ?? null,
            pct(r.genCpu ?? NaN),
          ]);
          data.push({
            op: name,
            ...cell,
            generator: r.generator,
            writesPerSecond: round(r.perSecond),
            p50Ms: r.p50,
            p99Ms: r.p99,
            ratioToRedis: peer ? round(r.perSecond / peer.perSecond, 3) : undefined,
            writesPerCommit: r.writesPerCommit === undefined
              ? undefined
              : round(r.writesPerCommit, 1),
            commitMs: r.commitMs === undefined ? undefined : round(r.commitMs, 3),
            commitsPerSecond: r.commitsPerSecond === undefined
              ? undefined
              : round(r.commitsPerSecond),
            serverCpu: round(r.serverCpu!, 2),
            mainThreadCpu: round(r.threadCpu!, 2),
            serverMicrosecondsPerWrite: usPerWrite(r) ?? undefined,
            allRunsServerMicrosecondsPerWrite: runs[`durable-${variant}`].map((x) => usPerWrite(x)),
            allRunsPerSecond: runs[`durable-${variant}`].map((x) => round(x.perSecond)),
            bottleneck: limit,
          });
        }
        if (peer) peerRow("redis INCR", "redis INCR (appendfsync always)", peer, true);
        if (js) {
          peerRow(
            "jetstream publish* (not durable)",
            "jetstream publish (nats-server 2.9: acknowledged before fsync, not durable)",
            js,
            false,
            { durable: false },
          );
        }
        for (const op of ["set", "increment"] as const) {
          const r = median(runs[op]);
          const open = runs[op][0];
          const ratio = round(r.perSecond / raw.perSecond, 3);
          const vs = (
            base?: WriteResult,
          ) => (op === "increment" && base ? round(r.perSecond / base.perSecond, 3) : null);
          const limit = limitOf(r);
          rows.push([
            op,
            objects,
            concurrency,
            reps,
            r.perSecond,
            r.p50,
            r.p99,
            raw.perSecond,
            ratio,
            vs(floor),
            vs(bare),
            vs(peer),
            vs(js),
            open.openRate
              ? `${open.openP50} / ${open.openP99} @ ${Math.round(open.openRate)}/s`
              : null,
            r.writesPerCommit === undefined ? null : round(r.writesPerCommit, 1),
            r.commitMs === undefined ? null : round(r.commitMs, 2),
            pct(r.serverCpu!),
            pct(r.threadCpu!),
            pct(r.machineCpu!),
            limit,
            usPerWrite(r),
            r.commitsPerSecond === undefined ? null : Math.round(r.commitsPerSecond),
            r.generator ?? null,
            pct(r.genCpu ?? NaN),
          ]);
          data.push({
            op,
            ...cell,
            generator: r.generator,
            serverMicrosecondsPerWrite: usPerWrite(r) ?? undefined,
            commitsPerSecond: r.commitsPerSecond === undefined
              ? undefined
              : round(r.commitsPerSecond),
            allRunsServerMicrosecondsPerWrite: runs[op].map((x) => usPerWrite(x)),
            writesPerSecond: round(r.perSecond),
            p50Ms: r.p50,
            p99Ms: r.p99,
            allRunsPerSecond: runs[op].map((x) => round(x.perSecond)),
            rawWritesPerSecond: round(raw.perSecond),
            rawP99Ms: raw.p99,
            ratioToRaw: ratio,
            sameShapeFloorPerSecond: op === "increment" ? round(floor.perSecond) : undefined,
            ratioToSameShapeFloor: vs(floor) ?? undefined,
            httpFloorPerSecond: op === "increment" ? round(bare.perSecond) : undefined,
            ratioToHttpFloor: vs(bare) ?? undefined,
            redisPerSecond: op === "increment" && peer ? round(peer.perSecond) : undefined,
            ratioToRedis: vs(peer) ?? undefined,
            ratioToJetstreamNotDurable: vs(js) ?? undefined,
            openLoopRate: open.openRate ? round(open.openRate) : undefined,
            openLoopP50Ms: open.openP50,
            openLoopP99Ms: open.openP99,
            errors: r.errors,
            commits: r.commits,
            writesPerCommit: r.writesPerCommit === undefined
              ? undefined
              : round(r.writesPerCommit, 1),
            commitMs: r.commitMs === undefined ? undefined : round(r.commitMs, 3),
            serverCpu: round(r.serverCpu!, 2),
            mainThreadCpu: round(r.threadCpu!, 2),
            machineCpu: round(r.machineCpu!, 2),
            generatorCpu: round(r.genCpu ?? 0, 2),
            bottleneck: limit,
          });
          if (r.errors) {
            notes.push(
              `${op} objects=${objects} writers=${concurrency}: ${r.errors} failed requests`,
            );
          }
          if (limit === "generator") {
            notes.push(
              `${op} objects=${objects} writers=${concurrency}: generator-bound; the server figure is a lower bound`,
            );
          }
        }
      }
    }
  } finally {
    await redis?.stop();
    await jetstream?.stop();
    await http.stop();
  }
  notes.push(
    "every Switchboard run starts a fresh server on a fresh data dir, as every raw and floor run gets a fresh dir (until 2026-11-25 one server took every run in turn, so later cells wrote into a store already holding millions of entries).",
  );
  notes.push(
    "writes / commit, commit ms: Switchboard's own counters (/metrics: switchboard_lmdb_transactions_total, one per LMDB write transaction, from lmdb-js's aftercommit event; switchboard_lmdb_commit_seconds; switchboard_log_appends_total) over the closed-loop window; a commit's time runs from handing its batch (the oldest of those one transaction took) to lmdb-js until it is durable. main thread: Switchboard's JavaScript thread, Redis's event loop (the process figure also counts JIT, GC and storage threads). limit: the core at 90% or more (a server's main thread), else `commits`: no core is saturated and the writers wait on commits.",
  );
  notes.push(
    "http floor: a bare Bun server (bench/baselines/http_floor_server.ts) that reads each request's body and answers a small JSON reply, storing nothing, driven by the same generator and requests as Switchboard's increments: what one HTTP/1.1 request per write costs here before any storage, auth or routing. vs http floor: the increment's rate over it.",
  );
  notes.push(
    "durable floor: the minimal durable increment server on the mandated stack (bench/baselines/durable_floor_server.ts): Bun.serve as the binary serves, lmdb-js opened with the store's settings (overlappingSync false, msgpack, the store's codec options) and lmdb-js's own group commit (the puts of one event-loop turn are one batch; batches queued while one syncs commit next); per request it parses the JSON body, reads the counter (held in memory after its first read), puts it (and, `+ log entry`, one small entry keyed [object, log id]), awaits the durable commit, replies JSON; `log entry + counter every 32nd` is Switchboard's storage shape (its state is a checkpoint every 32 entries, derived from the log in between). Same wrk requests as Switchboard's increments. vs redis in its row: its rate over Redis's in the same cell. writes / commit, commit ms, commits/s from its own /metrics (commits counted by lmdb-js's aftercommit event, one per LMDB write transaction).",
  );
  notes.push(
    "store alone: ObjectStore.write (increments) from that many concurrent loops in one Bun process over a fresh LMDB store (bench/baselines/objects_in_process.ts, the working tree's source), with the server's ordered log, commit queue and hub: the durable write path without HTTP. server µs/write there is the process's CPU per write (the JavaScript thread's is in results/latest.json, threadMicrosecondsPerWrite). From 64 writers it also runs at half of them: the commit size HTTP writers settle at.",
  );
  notes.push(
    "runs: cells with 64 writers run 3 times, interleaved (raw, floor, HTTP floor, Redis, JetStream, set, increment; then again), and show the medians; other cells run once, in the same interleaved order.",
  );
  notes.push(
    "open-loop (64-writer rows, first run): after the closed-loop window, requests leave on a fixed schedule at half the measured rate, each on an idle keep-alive connection or a new one, whatever the replies do; p50/p99 count from each request's intended send time (no coordinated omission).",
  );
  notes.push(
    "* jetstream: Debian's nats-server 2.9 acknowledges a JetStream publish before it reaches the disk (no sync_interval: always), so it is shown for scale and is NOT a durable peer; 8 client connections.",
  );
  notes.push(
    `generator: HTTP rows (Switchboard, HTTP floor) ${
      gen.name === "wrk"
        ? "from wrk (C, 1 thread, one keep-alive connection per writer; requests pre-formatted per object in Lua), the open-loop phase from the Bun generator at half wrk's rate"
        : "from the Bun generator (bench/gen/writes_gen.ts)"
    }; Redis rows from redis-benchmark when installed (else a Bun RESP client); gen cpu: the generator process's CPU share. server µs/write: the server process's CPU time (utime + stime from /proc, every thread) over the run divided by the writes it acknowledged: far less sensitive than writes/s to other load on the machine. commits/s: Switchboard's commits over the window its writes took.`,
  );
  notes.push(
    `value ~${valueBytes} B JSON per set; raw baseline = one awaited db.put of the same value per write (overlappingSync false), ${rt.name} runtime; Switchboard writers: one keep-alive HTTP/1.1 connection each (bench/gen/http1.ts); data dirs on the local disk (${tmpdir()}).`,
  );
  // commits/s beside writes / commit (rows are built in the order of `columns` above).
  const beside = <T>(
    row: T[],
  ): T[] => [...row.slice(0, 15), row[21], ...row.slice(15, 21), ...row.slice(22)];
  return {
    name: "writes",
    status: "ok",
    columns: beside(columns),
    rows: rows.map(beside),
    data,
    notes,
  };
}
