// Durable writes: set and increment on one hot object and on many objects, 1, 64 and 256
// concurrent writers, each acknowledged only when durable; baselines: raw awaited lmdb-js puts
// of the same bytes with the same durability settings, in the server's runtime, and the Redis
// peer (INCR with appendfsync always, when redis-server is installed) for increments.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APP, CpuMeter, matchingRuntime, runGenerator, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";
import { startRedis } from "../lib/peers.ts";

interface WriteResult {
  perSecond: number;
  p50: number;
  p99: number;
  openRate?: number;
  openP50?: number;
  openP99?: number;
  errors?: number;
  genCpu?: number;
}

/** Runs the durable-write matrix and its raw LMDB baseline. */
export async function writes(ctx: BenchContext): Promise<BenchReport> {
  const seconds = ctx.seconds(4, 1);
  const warmup = ctx.seconds(0.5, 0.3);
  const valueBytes = 100;
  const many = ctx.size(10000);
  // Growth curve in writers: 1, 8, 64, 256.
  const concurrencies = ctx.quick ? [1, 64, 256] : [1, 8, 64, 256];

  // Raw baselines first, in the runtime the server runs in: one put per write, and the
  // same-shape floor (the server's increment transaction without the server).
  const raw: Record<string, WriteResult> = {};
  const floor: Record<string, WriteResult> = {};
  const rt = matchingRuntime();
  for (const objects of [1, many]) {
    for (const concurrency of concurrencies) {
      for (const mode of ["writes", "shape"] as const) {
        const dir = mkdtempSync(join(tmpdir(), "sb-bench-raw-"));
        try {
          ctx.log(`raw lmdb ${mode === "writes" ? "puts" : "same-shape transactions"} (${rt.name}) objects=${objects} c=${concurrency}`);
          const r = await runGenerator<WriteResult>(rt.name, "baselines/lmdb_raw.ts", { mode, dir, concurrency, seconds, warmup, objects, valueBytes });
          (mode === "writes" ? raw : floor)[`${objects}/${concurrency}`] = r;
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  }

  // The Redis peer: INCR acknowledged after fsync, same writers and keys.
  const redis: Record<string, WriteResult> = {};
  const notes: string[] = [];
  const peer = await startRedis().catch((e) => {
    notes.push(`redis-server did not start: ${String(e).slice(0, 200)}`);
    return null;
  });
  if (!peer) notes.push("Redis peer missing: install redis-server (Debian: apt-get install redis-server) for its rows.");
  try {
    for (const objects of peer ? [1, many] : []) {
      for (const concurrency of concurrencies) {
        ctx.log(`redis INCR objects=${objects} writers=${concurrency}`);
        const meter = new CpuMeter(peer!.pid);
        const r = await runGenerator<WriteResult & { genCpu: number }>("bun", "gen/redis_writes_gen.ts", { port: peer!.port, objects, concurrency, seconds, warmup }, meter.mark);
        redis[`${objects}/${concurrency}`] = { ...r, serverCpu: meter.share } as WriteResult;
      }
    }
  } finally {
    await peer?.stop();
  }

  const columns = ["op", "objects", "writers", "writes/s", "p50 ms", "p99 ms", "raw writes/s", "raw p99 ms", "ratio", "vs floor", "vs redis", "open-loop p50/p99 ms @ rate", "server cpu", "machine", "limit"];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  for (const [k, r] of Object.entries(floor)) {
    const [objects, writers] = k.split("/").map(Number);
    rows.push(["lmdb same-shape txn", objects, writers, r.perSecond, r.p50, r.p99, null, null, null, null, null, null, null, null, null]);
    data.push({ op: "lmdb same-shape transaction (floor)", runtime: rt.name, objects, writers, writesPerSecond: round(r.perSecond), p50Ms: r.p50, p99Ms: r.p99 });
  }
  for (const [k, r] of Object.entries(redis)) {
    const [objects, writers] = k.split("/").map(Number);
    rows.push(["redis INCR", objects, writers, r.perSecond, r.p50, r.p99, null, null, null, null, null, null, `${Math.round(((r as { serverCpu?: number }).serverCpu ?? 0) * 100)}%`, null, null]);
    data.push({ op: "redis INCR (appendfsync always)", objects, writers, writesPerSecond: round(r.perSecond), p50Ms: r.p50, p99Ms: r.p99 });
  }
  const server = await startSwitchboard();
  try {
    if (!(await routeExists(server.baseUrl, "PUT", `/api/v1/objects/${APP.id}/probe/probe/v`, { value: 1 }))) {
      const p = pending("writes", "Durable Objects HTTP API is not available yet; raw baseline only");
      for (const [k, r] of Object.entries(raw)) data.push({ server: "raw lmdb", objectsAndWriters: k, writesPerSecond: round(r.perSecond), p50Ms: r.p50, p99Ms: r.p99 });
      return { ...p, data };
    }
    for (const op of ["set", "increment"] as const) {
      for (const objects of [1, many]) {
        for (const concurrency of concurrencies) {
          ctx.log(`${op} objects=${objects} writers=${concurrency}`);
          const meter = new CpuMeter(server.pid);
          const r = await runGenerator<WriteResult>("bun", "gen/writes_gen.ts", { base: server.baseUrl, op, objects, concurrency, seconds, warmup, valueBytes, openSeconds: concurrency === 64 ? ctx.seconds(2, 1) : 0 }, meter.mark);
          const base = raw[`${objects}/${concurrency}`];
          const ratio = round(r.perSecond / base.perSecond, 3);
          const peerRate = op === "increment" ? redis[`${objects}/${concurrency}`]?.perSecond : undefined;
          const vsRedis = peerRate ? round(r.perSecond / peerRate, 3) : null;
          const floorRate = op === "increment" ? floor[`${objects}/${concurrency}`]?.perSecond : undefined;
          const vsFloor = floorRate ? round(r.perSecond / floorRate, 3) : null;
          const limit = bottleneck(r.genCpu ?? 0, meter.share, meter.machine);
          rows.push([op, objects, concurrency, r.perSecond, r.p50, r.p99, base.perSecond, base.p99, ratio, vsFloor, vsRedis, r.openRate ? `${r.openP50} / ${r.openP99} @ ${Math.round(r.openRate)}/s` : null, `${Math.round(meter.share * 100)}%`, pct(meter.machine), limit]);
          data.push({ op, objects, writers: concurrency, writesPerSecond: round(r.perSecond), p50Ms: r.p50, p99Ms: r.p99, rawWritesPerSecond: round(base.perSecond), rawP50Ms: base.p50, rawP99Ms: base.p99, ratioToRaw: ratio, ratioToSameShapeFloor: vsFloor ?? undefined, sameShapeFloorPerSecond: floorRate ? round(floorRate) : undefined, ratioToRedis: vsRedis ?? undefined, openLoopRate: r.openRate ? round(r.openRate) : undefined, openLoopP50Ms: r.openP50, openLoopP99Ms: r.openP99, errors: r.errors, serverCpu: round(meter.share, 2), machineCpu: round(meter.machine, 2), generatorCpu: round(r.genCpu ?? 0, 2), bottleneck: limit });
          if (r.errors) notes.push(`${op} objects=${objects} writers=${concurrency}: ${r.errors} failed requests`);
          if (limit === "generator") notes.push(`${op} objects=${objects} writers=${concurrency}: generator-bound; the server figure is a lower bound`);
        }
      }
    }
  } finally {
    await server.stop();
  }
  notes.push("open-loop (64-writer rows): after the closed-loop window, requests leave on a fixed schedule at half the measured rate, whatever the replies do; p50/p99 count from each request's intended send time, so a stall shows in full (no coordinated omission).");
  notes.push(`value ~${valueBytes} B JSON per set; raw baseline = one awaited db.put of the same value per write (overlappingSync false), ${rt.name} runtime, same writers and objects; data dirs on the local disk (${tmpdir()}).`);
  return { name: "writes", status: "ok", columns, rows, data, notes };
}
