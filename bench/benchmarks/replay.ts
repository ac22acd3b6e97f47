// Replay: join a Durable Object (after_log_id) and a channel (after_serial) `count` entries
// back and time the replay, at 10k / 100k / 1M entries (10k in quick mode); baselines in the
// same run: a raw lmdb-js range read of as many log-shaped entries, and the Redis peer
// (XRANGE in pages of 1,000, when redis-server is installed). Medians of 3; the server's RSS
// before, at peak during and after the joins (settled).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  APP,
  CpuMeter,
  matchingRuntime,
  rssBytes,
  runGenerator,
  startSwitchboard,
} from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";
import { startRedis } from "../lib/peers.ts";

interface ReplayResult {
  entries: number;
  bestPerSecond: number;
  medianPerSecond: number;
  medianMs: number;
  /** The first join of the server's process (before any warm-up). */
  coldMs: number;
  firstEntryMs: number;
  complete: boolean;
  preloadPerSecond: number;
  preloadFailures: number;
  genCpu: number;
}

const MB = 1024 * 1024;

/** Runs the replay benchmark for every size. */
export async function replay(ctx: BenchContext): Promise<BenchReport> {
  const sizes = ctx.quick ? [10_000] : [10_000, 100_000, 1_000_000];
  const valueBytes = 100;
  const rt = matchingRuntime();
  const columns = [
    "product",
    "entries",
    "entries/s",
    "replay ms",
    "cold join ms",
    "first entry ms",
    "vs raw range",
    "vs op-map range",
    "vs redis",
    "rss before / peak / settled MB",
    "server cpu",
    "limit",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  const notes: string[] = [];
  for (const count of sizes) {
    const dir = mkdtempSync(join(tmpdir(), "sb-bench-raw-"));
    let raw: { perSecond: number; legacyPerSecond: number };
    try {
      ctx.log(`raw lmdb range read of ${count} entries (${rt.name})`);
      raw = await runGenerator(
        rt.name,
        "baselines/lmdb_raw.ts",
        { mode: "range", dir, count, valueBytes },
        undefined,
        600_000,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    rows.push([
      "raw lmdb range read",
      count,
      raw.perSecond,
      round(count / raw.perSecond * 1000, 1),
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
    rows.push([
      "raw lmdb range read (op maps)",
      count,
      raw.legacyPerSecond,
      round(count / raw.legacyPerSecond * 1000, 1),
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
    data.push({
      product: "raw lmdb range read",
      runtime: rt.name,
      entries: count,
      entriesPerSecond: round(raw.perSecond),
    });
    data.push({
      product: "raw lmdb range read (op maps)",
      runtime: rt.name,
      entries: count,
      entriesPerSecond: round(raw.legacyPerSecond),
    });

    let redisRate: number | undefined;
    const peer = await startRedis().catch(() => null);
    if (peer) {
      try {
        ctx.log(`redis XRANGE of ${count} entries`);
        const r = await runGenerator<{ perSecond: number; firstEntryMs: number }>(
          "bun",
          "gen/redis_replay_gen.ts",
          { port: peer.port, count, valueBytes },
          undefined,
          600_000,
        );
        redisRate = r.perSecond;
        rows.push([
          "redis XRANGE (pages of 1,000)",
          count,
          r.perSecond,
          round(count / r.perSecond * 1000, 1),
          null,
          round(r.firstEntryMs, 1),
          null,
          null,
          null,
          null,
          null,
          null,
        ]);
        data.push({
          product: "redis XRANGE",
          entries: count,
          entriesPerSecond: round(r.perSecond),
          firstEntryMs: round(r.firstEntryMs, 1),
        });
      } finally {
        await peer.stop();
      }
    } else if (count === sizes[0]) {
      notes.push(
        "Redis peer missing: install redis-server (Debian: apt-get install redis-server) for its rows.",
      );
    }

    const server = await startSwitchboard(["--history-max-count", String(count + 1000)]);
    try {
      const kinds = [
        {
          kind: "object" as const,
          label: "durable object (after_log_id)",
          probe: ["PUT", `/api/v1/objects/${APP.id}/probe/probe/v`, { value: 1 }] as const,
        },
        {
          kind: "channel" as const,
          label: "channel (after_serial)",
          probe: ["POST", `/api/apps/${APP.id}/trigger`, {
            channel: "probe",
            event: "probe",
            data: {},
          }] as const,
        },
      ];
      for (const k of kinds) {
        if (!(await routeExists(server.baseUrl, k.probe[0], k.probe[1], k.probe[2]))) continue;
        ctx.log(`replay ${k.label}: preloading ${count} entries`);
        const meter = new CpuMeter(server.pid);
        let before = 0;
        let peak = 0;
        // RSS: at the start of the joins, the peak while they run, then after a second's rest.
        const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(server.pid))), 50);
        try {
          const r = await runGenerator<ReplayResult>("bun", "gen/replay_gen.ts", {
            base: server.baseUrl,
            kind: k.kind,
            count,
            rounds: 5,
            valueBytes,
          }, (mark) => {
            meter.mark(mark);
            if (mark === "start") before = peak = rssBytes(server.pid);
          }, 900_000);
          clearInterval(sampler);
          await new Promise((res) => setTimeout(res, 1000));
          const settled = rssBytes(server.pid);
          const vsRaw = round(r.medianPerSecond / raw.perSecond, 3);
          const vsLegacy = round(r.medianPerSecond / raw.legacyPerSecond, 3);
          const vsRedis = redisRate ? round(r.medianPerSecond / redisRate, 3) : null;
          const limit = bottleneck(r.genCpu, meter.thread, meter.machine);
          const rss = `${Math.round(before / MB)} / ${Math.round(peak / MB)} / ${
            Math.round(settled / MB)
          }`;
          rows.push([
            k.label,
            r.complete ? r.entries : `${r.entries} (incomplete)`,
            r.medianPerSecond,
            round(r.medianMs, 1),
            round(r.coldMs, 1),
            round(r.firstEntryMs, 1),
            vsRaw,
            vsLegacy,
            vsRedis,
            rss,
            `${Math.round(meter.share * 100)}%`,
            limit,
          ]);
          data.push({
            product: k.label,
            entries: r.entries,
            complete: r.complete,
            entriesPerSecond: round(r.medianPerSecond),
            bestEntriesPerSecond: round(r.bestPerSecond),
            replayMs: round(r.medianMs, 1),
            coldJoinMs: round(r.coldMs, 1),
            firstEntryMs: round(r.firstEntryMs, 1),
            ratioToRawRange: vsRaw,
            ratioToOpMapRange: vsLegacy,
            ratioToRedis: vsRedis ?? undefined,
            rssBeforeMb: round(before / MB),
            rssPeakMb: round(peak / MB),
            rssSettledMb: round(settled / MB),
            preloadWritesPerSecond: round(r.preloadPerSecond),
            serverCpu: round(meter.share, 2),
            mainThreadCpu: round(meter.thread, 2),
            machineCpu: round(meter.machine, 2),
            generatorCpu: round(r.genCpu, 2),
            bottleneck: limit,
          });
          if (!r.complete) notes.push(`${k.label} at ${count}: a join did not get every entry`);
        } catch (e) {
          rows.push([k.label, "error", null, null, null, null, null, null, null, null, null, null]);
          data.push({ product: k.label, entries: count, error: String(e).slice(0, 500) });
          notes.push(`${k.label} at ${count}: ${String(e).slice(0, 300)}`);
        } finally {
          clearInterval(sampler);
        }
      }
    } finally {
      await server.stop();
    }
  }
  notes.push(
    "entries/s = entries pushed before the join reply / time from sending phx_join to the reply; median of 5 joins over the WebSocket after 3 untimed warm-up joins (the raw range read and Redis: median of 5 reads after 3 warm-up reads); cold join ms: the first join of the server's process, before any warm-up.",
  );
  notes.push(
    "raw lmdb range read: the server's stored bytes (an object's log entry as lib/objects/entry.ts stores it, the server's codec options); (op maps): { op, key, value } maps under lmdb-js's default msgpack options, the baseline issue 18's replay goal was set against.",
  );
  const failed = data.some((d) => "error" in d);
  return { name: "replay", status: failed ? "error" : "ok", columns, rows, data, notes };
}
