// Connections: many idle sockets, each joined to its own channel; server memory per
// connection (VmRSS delta / sockets) and connect+join rate. Scaled down automatically to the
// open-file limit (the server holds one descriptor per socket).
import { CpuMeter, openFileLimit, rssBytes, runGenerator, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";

interface ConnResult {
  joined: number;
  failures: number;
  seconds: number;
  perSecond: number;
  stillOpen: number;
  genCpu: number;
}

/** Sockets per 127.0.0.x source address (the ephemeral port range is about 28k). */
const PER_ADDRESS = 25_000;

/** Runs the idle-connection benchmark at the configured sizes. */
export async function connections(ctx: BenchContext): Promise<BenchReport> {
  const limit = openFileLimit();
  const cap = limit - 300;
  const columns = [
    "target sockets",
    "sockets",
    "connect+join/s",
    "rss before MB",
    "rss after MB",
    "KiB per socket",
    "still open",
    "server cpu",
    "gen cpu",
    "limit",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  const notes: string[] = [];
  // Growth curve in sockets: 1k, 10k, 19k, 50k.
  for (const target of [ctx.size(1_000), ctx.size(10_000), ctx.size(19_000), ctx.size(50_000)]) {
    const count = Math.min(target, cap);
    if (count < target) {
      notes.push(
        `${target} sockets scaled down to ${count}: open-file limit (ulimit -n) is ${limit} and cannot be raised here (hard limit)`,
      );
    }
    const server = await startSwitchboard();
    try {
      if (
        !(await routeExists(server.baseUrl, "POST", "/api/apps/app-1/trigger", {
          channel: "probe",
          event: "probe",
          data: {},
        }))
      ) {
        return pending("connections", "channels (pubsub) are not available yet");
      }
      await new Promise((r) => setTimeout(r, 500));
      const before = rssBytes(server.pid);
      let after = NaN;
      // Each generator process holds at most `perProc` sockets (its own descriptor limit).
      const perProc = Math.max(1, cap - 200);
      const procs = Math.ceil(count / perProc);
      let ready = 0;
      let started = 0;
      // Server CPU over the connect phase: from the first generator's start to the last one's ready.
      const meter = new CpuMeter(server.pid);
      ctx.log(`connections: ${count} sockets from ${procs} generator process(es)`);
      const results = await Promise.all(Array.from({ length: procs }, (_, p) => {
        const n = Math.min(perProc, count - p * perProc);
        // Bun's client is much faster; node + ws only when extra source addresses are needed.
        const runtime = count > PER_ADDRESS ? "node" : "bun";
        return runGenerator<ConnResult>(runtime, "gen/conns_gen.mjs", {
          base: server.baseUrl,
          count: n,
          offset: p * perProc,
          holdMs: 3000,
          perAddress: PER_ADDRESS,
        }, (m) => {
          if (m === "start" && ++started === 1) meter.mark("start");
          if (m === "ready" && ++ready === procs) {
            after = rssBytes(server.pid);
            meter.mark("end");
          }
        });
      }));
      const joined = results.reduce((a, r) => a + r.joined, 0);
      const seconds = Math.max(...results.map((r) => r.seconds));
      const stillOpen = results.reduce((a, r) => a + r.stillOpen, 0);
      const perSocket = (after - before) / Math.max(1, joined) / 1024;
      const genCpu = Math.max(...results.map((r) => r.genCpu));
      const limitedBy = bottleneck(genCpu, meter.thread, meter.machine);
      rows.push([
        target,
        joined,
        joined / seconds,
        round(before / 2 ** 20, 1),
        round(after / 2 ** 20, 1),
        round(perSocket, 1),
        stillOpen,
        pct(meter.share),
        pct(genCpu),
        limitedBy,
      ]);
      data.push({
        targetSockets: target,
        sockets: joined,
        failures: results.reduce((a, r) => a + r.failures, 0),
        connectPerSecond: round(joined / seconds),
        rssBeforeBytes: before,
        rssAfterBytes: after,
        bytesPerSocket: round(perSocket * 1024),
        stillOpenAfterHold: stillOpen,
        serverCpu: round(meter.share, 2),
        mainThreadCpu: round(meter.thread, 2),
        machineCpu: round(meter.machine, 2),
        generatorCpu: round(genCpu, 2),
        bottleneck: limitedBy,
      });
    } finally {
      await server.stop();
    }
  }
  notes.push(
    "each socket connects, receives `connected` and joins its own public channel; the generator (Bun's WebSocket client; node + ws with several 127.0.0.x source addresses beyond 25k sockets) keeps 200 connects in flight; RSS read from /proc/<pid>/status once all are joined.",
  );
  return { name: "connections", status: "ok", columns, rows, data, notes };
}
