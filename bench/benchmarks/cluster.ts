// Clustered mode (docs/cluster.md) beside one node, in the same run: durable increments from 64
// writers on one hot object and on 10k objects (spread over the 3 nodes in the cluster), and
// fan-out latency from a write on one node to a subscriber (on another node in the cluster).
// NATS: a 3-server loopback JetStream cluster of Debian's nats-server (2.9, no fsync: see
// docs/cluster.md), so cluster rows show the protocol's cost, not a disk's.
import { APP, CpuMeter, runGenerator, type Served, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { findProgram } from "../lib/peers.ts";
import { startNatsCluster } from "../../tests/cluster/nats_servers.ts";

interface ClusterResult {
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
  genCpu: number;
  fanP50?: number;
  fanP99?: number;
  fanCount?: number;
}

/** Runs the single-node and 3-node rows. */
export async function cluster(ctx: BenchContext): Promise<BenchReport> {
  if (!findProgram("nats-server")) {
    return pending("cluster", "nats-server missing (Debian: apt-get install nats-server)");
  }
  const seconds = ctx.seconds(4, 1.5);
  const warmup = ctx.seconds(0.5, 0.3);
  const many = ctx.size(10000);
  const writers = 64;
  const fanRate = 200;
  const fanSeconds = ctx.seconds(3, 1);
  const results: { mode: string; objects: number; r: ClusterResult; cpu: number }[] = [];

  const run = async (mode: string, nodes: Served[]) => {
    for (const objects of [1, many]) {
      ctx.log(`${mode}: ${writers} writers, ${objects} object(s)`);
      const meters = nodes.map((n) => new CpuMeter(n.pid));
      const r = await runGenerator<ClusterResult>("bun", "gen/cluster_gen.ts", {
        bases: nodes.map((n) => n.baseUrl),
        objects,
        concurrency: writers,
        seconds,
        warmup,
        fanRate: objects === 1 ? fanRate : 0,
        fanSeconds,
        writeBase: nodes[0].baseUrl,
        subBase: nodes[nodes.length - 1].baseUrl,
        tag: mode,
      }, (name) => meters.forEach((m) => m.mark(name)));
      results.push({ mode, objects, r, cpu: meters.reduce((s, m) => s + m.share, 0) });
    }
  };

  const single = await startSwitchboard();
  try {
    await run("one node", [single]);
  } finally {
    await single.stop();
  }

  const nats = await startNatsCluster(3);
  const nodes: Served[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const urls = [...nats.urls.slice(i), ...nats.urls.slice(0, i)].join(",");
      nodes.push(
        await startSwitchboard([
          "--nats",
          urls,
          "--node-id",
          `bench-${i + 1}`,
          "--log-level",
          "warn",
        ]),
      );
    }
    await run("3 nodes", nodes);
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await nats.stop();
  }

  const columns = [
    "mode",
    "objects",
    "writers",
    "writes/s",
    "p50 ms",
    "p99 ms",
    "vs one node",
    "fan-out p50/p99 ms",
    "server cpu (sum)",
    "errors",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  for (const { mode, objects, r, cpu } of results) {
    const base = results.find((x) => x.mode === "one node" && x.objects === objects)!.r;
    const ratio = round(r.perSecond / base.perSecond, 3);
    const fan = r.fanP50 !== undefined ? `${r.fanP50} / ${r.fanP99}` : null;
    rows.push([
      mode,
      objects,
      writers,
      r.perSecond,
      r.p50,
      r.p99,
      ratio,
      fan,
      `${Math.round(cpu * 100)}%`,
      r.errors,
    ]);
    data.push({
      mode,
      objects,
      writers,
      writesPerSecond: round(r.perSecond),
      p50Ms: r.p50,
      p99Ms: r.p99,
      ratioToOneNode: ratio,
      fanoutP50Ms: r.fanP50,
      fanoutP99Ms: r.fanP99,
      fanoutSamples: r.fanCount,
      serverCpuSum: round(cpu, 2),
      errors: r.errors,
    });
  }
  return {
    name: "cluster",
    status: "ok",
    columns,
    rows,
    data,
    notes: [
      `increments acknowledged when durable; in the cluster, writers are spread round-robin over the 3 nodes (app ${APP.id}).`,
      `fan-out: ${fanRate} writes/s for ${fanSeconds} s on the first node, one subscriber on the last node (the same node for one node); latency from the write's send time to its delivery.`,
      "NATS: 3 nats-server 2.9 processes on loopback, stream with 3 replicas; 2.9 acknowledges before fsync, so cluster rows measure replication, not the disk.",
    ],
  };
}
