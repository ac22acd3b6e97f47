// AI chat: many concurrent `useChat` users (the AI SDK's chat state machine over
// SwitchboardChatTransport) each watching an agent stream at 1,500 tokens/s, beside the same
// load watched through a plain ChatClient, in the same run on the same server.
import { CpuMeter, runGenerator, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct } from "../lib/report.ts";
import { round } from "../lib/stats.ts";

interface Result {
  tokensPerSecond: number;
  samples: number;
  p50: number;
  p99: number;
  max: number;
  laggingUsers: number;
  pushErrors: number;
  genCpu: number;
}

const RATE = 1500;

/** Runs each user count through both paths, the plain ChatClient first. */
export async function aichat(ctx: BenchContext): Promise<BenchReport> {
  const server = await startSwitchboard();
  const columns = [
    "users",
    "path",
    "tokens/s sent",
    "p50 ms",
    "p99 ms",
    "max ms",
    "p99 vs chatclient",
    "lagging",
    "server cpu",
    "gen cpu",
    "limit",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  let step = 0;
  try {
    for (const users of ctx.quick ? [4] : [10, 40]) {
      const p99 = new Map<string, number>();
      for (const mode of ["chatclient", "transport"] as const) {
        ctx.log(`aichat: ${users} users, ${mode}`);
        const meter = new CpuMeter(server.pid);
        const r = await runGenerator<Result>("deno", "gen/aichat_gen.ts", {
          base: server.baseUrl,
          users,
          mode,
          tokensPerSecond: RATE,
          seconds: ctx.seconds(4, 1.5),
          warmup: ctx.seconds(1, 0.5),
          tag: `${Date.now()}-${step++}`,
        }, meter.mark);
        p99.set(mode, r.p99);
        const ratio = mode === "transport" ? round(r.p99 / p99.get("chatclient")!, 2) : null;
        const limit = bottleneck(r.genCpu, meter.thread, meter.machine);
        rows.push([
          users,
          mode === "transport" ? "useChat + transport" : "ChatClient",
          r.tokensPerSecond,
          r.p50,
          r.p99,
          r.max,
          ratio,
          r.laggingUsers,
          pct(meter.share),
          pct(r.genCpu),
          limit,
        ]);
        data.push({
          users,
          path: mode,
          tokensPerSecondSent: round(r.tokensPerSecond),
          p50Ms: r.p50,
          p99Ms: r.p99,
          maxMs: r.max,
          p99VsChatClient: ratio ?? undefined,
          laggingUsers: r.laggingUsers,
          pushErrors: r.pushErrors,
          serverCpu: round(meter.share, 2),
          mainThreadCpu: round(meter.thread, 2),
          generatorCpu: round(r.genCpu, 2),
          bottleneck: limit,
        });
      }
    }
  } finally {
    await server.stop();
  }
  const notes = [
    `Each user has its own thread, socket and agent run; the agent pushes the due tokens every 10 ms (${RATE} tokens/s per run). Latency: from the push to the user's state holding the token (for useChat: the AI SDK's chat state after it processed the text-delta chunk); the server's 40 ms roll-up is in both paths.`,
    "Agents and users share one generator process (Deno), so gen cpu is both sides.",
  ];
  return { name: "aichat", status: "ok", columns, rows, data, notes };
}
