// Chat join growth curve: joining a thread with 100, 1k and 10k messages (100 and 1k in quick
// mode), without a position (the snapshot: newest 50 messages, runs, streams) and with
// after_log_id 0 (every log entry replayed before the reply).
import { CpuMeter, runGenerator, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck } from "../lib/report.ts";
import { round } from "../lib/stats.ts";

interface Result {
  messages: number;
  preloadSeconds: number;
  snapshotMs: number;
  replayMs: number;
  replayEntries: number;
  genCpu: number;
}

/** Runs the chat join sizes on one server. */
export async function chatjoin(ctx: BenchContext): Promise<BenchReport> {
  const sizes = ctx.quick ? [100, 1000] : [100, 1000, 10_000];
  const server = await startSwitchboard();
  const columns = [
    "messages",
    "join (snapshot) ms",
    "join with after_log_id 0 ms",
    "entries replayed",
    "replayed entries/s",
    "limit",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  try {
    for (const messages of sizes) {
      ctx.log(`chatjoin: ${messages} messages`);
      const meter = new CpuMeter(server.pid);
      const r = await runGenerator<Result>(
        "bun",
        "gen/chatjoin_gen.ts",
        { base: server.baseUrl, messages, rounds: 5, tag: `${Date.now()}-${messages}` },
        meter.mark,
        600_000,
      );
      const rate = r.replayEntries / (r.replayMs / 1000);
      const limit = bottleneck(r.genCpu, meter.thread, meter.machine);
      rows.push([
        messages,
        round(r.snapshotMs, 2),
        round(r.replayMs, 1),
        r.replayEntries,
        round(rate),
        limit,
      ]);
      data.push({
        messages,
        snapshotJoinMs: round(r.snapshotMs, 2),
        replayJoinMs: round(r.replayMs, 1),
        replayEntries: r.replayEntries,
        replayEntriesPerSecond: round(rate),
        preloadSeconds: round(r.preloadSeconds, 1),
        serverCpu: round(meter.share, 2),
        mainThreadCpu: round(meter.thread, 2),
        bottleneck: limit,
      });
    }
  } finally {
    await server.stop();
  }
  const notes = [
    "Median of 5 joins each. A join without a position costs the same at any thread size (newest 50 messages); with after_log_id 0 it grows with the log (one entry per message here).",
  ];
  return { name: "chatjoin", status: "ok", columns, rows, data, notes };
}
