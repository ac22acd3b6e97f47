// Replay: join a Durable Object (after_log_id) and a channel (after_serial) `count` entries
// back and time the replay; baseline: a raw lmdb-js range read of as many log-shaped entries.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APP, CpuMeter, matchingRuntime, runGenerator, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";

interface ReplayResult {
  entries: number;
  bestPerSecond: number;
  medianPerSecond: number;
  bestMs: number;
  firstEntryMs: number;
  preloadPerSecond: number;
  preloadFailures: number;
  genCpu: number;
}

/** Runs the replay benchmark for objects and channels plus the raw range-read baseline. */
export async function replay(ctx: BenchContext): Promise<BenchReport> {
  const count = ctx.size(100_000);
  const valueBytes = 100;
  const rt = matchingRuntime();
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-raw-"));
  let raw: { perSecond: number };
  try {
    ctx.log(`raw lmdb range read of ${count} entries (${rt.name})`);
    raw = await runGenerator(rt.name, "baselines/lmdb_raw.ts", { mode: "range", dir, count, valueBytes });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const columns = ["product", "entries", "entries/s", "replay ms", "first entry ms", "raw range entries/s", "ratio", "server cpu", "machine", "limit"];
  const rows: (string | number | null)[][] = [["raw lmdb range read", count, raw.perSecond, round(count / raw.perSecond * 1000, 1), null, null, null, null, null]];
  const data: Record<string, unknown>[] = [{ product: "raw lmdb range read", runtime: rt.name, entries: count, entriesPerSecond: round(raw.perSecond) }];
  const notes: string[] = [];
  const missing: string[] = [];
  const server = await startSwitchboard(["--history-max-count", String(count + 1000)]);
  try {
    const kinds = [
      { kind: "object" as const, label: "durable object (after_log_id)", probe: ["PUT", `/api/v1/objects/${APP.id}/probe/probe/v`, { value: 1 }] as const },
      { kind: "channel" as const, label: "channel (after_serial)", probe: ["POST", `/api/apps/${APP.id}/trigger`, { channel: "probe", event: "probe", data: {} }] as const },
    ];
    for (const k of kinds) {
      if (!(await routeExists(server.baseUrl, k.probe[0], k.probe[1], k.probe[2]))) {
        missing.push(k.label);
        rows.push([k.label, "PENDING", null, null, null, null, null, null, null]);
        continue;
      }
      ctx.log(`replay ${k.label}: preloading ${count} entries`);
      const meter = new CpuMeter(server.pid);
      try {
        const r = await runGenerator<ReplayResult>("bun", "gen/replay_gen.ts", { base: server.baseUrl, kind: k.kind, count, rounds: 3, valueBytes }, meter.mark);
        const ratio = round(r.bestPerSecond / raw.perSecond, 3);
        const limit = bottleneck(r.genCpu, meter.share, meter.machine);
        rows.push([k.label, r.entries, r.bestPerSecond, round(r.bestMs, 1), round(r.firstEntryMs, 1), raw.perSecond, ratio, `${Math.round(meter.share * 100)}%`, pct(meter.machine), limit]);
        data.push({ product: k.label, entries: r.entries, entriesPerSecond: round(r.bestPerSecond), medianEntriesPerSecond: round(r.medianPerSecond), replayMs: round(r.bestMs, 1), firstEntryMs: round(r.firstEntryMs, 1), ratioToRawRange: ratio, preloadWritesPerSecond: round(r.preloadPerSecond), serverCpu: round(meter.share, 2), machineCpu: round(meter.machine, 2), generatorCpu: round(r.genCpu, 2), bottleneck: limit });
        if (r.entries !== count) notes.push(`${k.label}: ${r.entries} of ${count} entries replayed`);
        if (limit === "generator") notes.push(`${k.label}: generator-bound; the server figure is a lower bound`);
      } catch (e) {
        rows.push([k.label, "error", null, null, null, null, null, null, null]);
        data.push({ product: k.label, error: String(e).slice(0, 500) });
        notes.push(`${k.label}: ${String(e).slice(0, 300)}`);
      }
    }
  } finally {
    await server.stop();
  }
  notes.push("entries/s = entries pushed before the join reply / time from sending phx_join to the reply (best of 3 joins over the WebSocket).");
  if (missing.length) notes.unshift(`PENDING: ${missing.join(", ")} not available yet`);
  const failed = data.some((d) => "error" in d);
  return { name: "replay", status: missing.length ? "pending" : failed ? "error" : "ok", columns, rows, data, notes };
}
