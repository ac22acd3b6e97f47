// Clustered mode (docs/cluster.md) beside one node, in the same run: durable increments from 64
// writers on one hot object and on 10k objects (spread over the 3 nodes in the cluster), and
// fan-out latency from a write on one node to a subscriber (on another node in the cluster).
// NATS: a 3-server loopback JetStream cluster of Debian's nats-server (2.9, no fsync: see
// docs/cluster.md), so cluster rows show the protocol's cost, not a disk's. Beside them: where
// a clustered batch's milliseconds go (each node's `/metrics` phases over the measured window),
// and the bound: JetStream alone on the same 3 servers, 64 closed-loop publishers. With wrk
// installed, the write rows are measured again with wrk (64 keep-alive connections; one wrk per
// node in the cluster): Bun's fetch generator tops out near one node's rate, wrk does not.
import { APP, CpuMeter, runGenerator, type Served, startSwitchboard } from "../lib/proc.ts";
import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { findProgram } from "../lib/peers.ts";
import { httpGenerator, wrkWrites } from "../lib/native_gen.ts";
import { startNatsCluster } from "../../tests/cluster/nats_servers.ts";

/** Bytes per write in the bound's messages: about an increment's write set in the log. */
const BOUND_BYTES = 120;

interface ClusterResult {
  writes: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
  genCpu: number;
  fanP50?: number;
  fanP99?: number;
  fanCount?: number;
}

/** The clustered write phases (`lib/metrics/cluster.ts`), in order. */
const PHASES = ["queued", "wait_apply", "speculate", "publish", "read", "apply", "confirm"];

/** Sum (seconds) and count per phase of `switchboard_cluster_write_phase_seconds` on the
 * nodes at `bases`, added up (a node that does not answer counts nothing). */
async function scrapePhases(bases: string[]): Promise<Map<string, [number, number]>> {
  const out = new Map<string, [number, number]>(PHASES.map((p) => [p, [0, 0]]));
  const re = /^switchboard_cluster_write_phase_seconds_(sum|count)\{phase="(\w+)"[^}]*\} (\S+)$/;
  for (const base of bases) {
    const text = await fetch(`${base}/metrics`).then((r) => r.text()).catch(() => "");
    for (const line of text.split("\n")) {
      const m = re.exec(line);
      const v = m && out.get(m[2]);
      if (v) v[m[1] === "sum" ? 0 : 1] += Number(m[3]);
    }
  }
  return out;
}

interface Phases {
  /** Mean ms per batch, by phase, over the measured window. */
  ms: Record<string, number>;
  /** Writes acknowledged per batch acknowledged. */
  perBatch: number;
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
  const results: {
    mode: string;
    objects: number | string;
    r: ClusterResult;
    cpu: number;
    phases?: Phases;
  }[] = [];

  const run = async (mode: string, nodes: Served[]) => {
    for (const objects of [1, many]) {
      ctx.log(`${mode}: ${writers} writers, ${objects} object(s)`);
      const meters = nodes.map((n) => new CpuMeter(n.pid));
      const bases = nodes.map((n) => n.baseUrl);
      const scrapes: Partial<Record<string, Promise<Map<string, [number, number]>>>> = {};
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
      }, (name) => {
        meters.forEach((m) => m.mark(name));
        if (nodes.length > 1) scrapes[name] = scrapePhases(bases);
      });
      let phases: Phases | undefined;
      if (scrapes.start && scrapes.end) {
        const [a, b] = [await scrapes.start, await scrapes.end];
        const ms: Record<string, number> = {};
        for (const p of PHASES) {
          const n = b.get(p)![1] - a.get(p)![1];
          ms[p] = n > 0 ? round(((b.get(p)![0] - a.get(p)![0]) / n) * 1000, 1) : NaN;
        }
        const batches = b.get("confirm")![1] - a.get("confirm")![1];
        phases = { ms, perBatch: batches > 0 ? round(r.writes / batches, 1) : NaN };
      }
      results.push({ mode, objects, r, cpu: meters.reduce((s, m) => s + m.share, 0), phases });
    }
  };

  const wrk = httpGenerator();
  /** The write rows again with wrk: `writers` connections split over `nodes`, one wrk each;
   * rates add up, p50 is the slowest node's, p99 the worst node's. */
  const runWrk = async (mode: string, nodes: Served[]) => {
    if (wrk.name !== "wrk") return;
    for (const objects of [1, many]) {
      ctx.log(`${mode} (wrk): ${writers} connections, ${objects} object(s)`);
      const runs = await Promise.all(nodes.map((n, i) =>
        wrkWrites(wrk.path!, {
          base: n.baseUrl,
          op: "increment",
          prefix: `/api/v1/objects/${APP.id}/bench-wrk-${nodes.length}-${objects}`,
          objects,
          concurrency: Math.floor(writers / nodes.length) + (i < writers % nodes.length ? 1 : 0),
          seconds,
          warmup,
          valueBytes: 0,
          headers: {
            "content-type": "application/json",
            "x-app-key": APP.key,
            "x-app-secret": APP.secret,
          },
        }, n.pid)
      ));
      const r: ClusterResult = {
        writes: runs.reduce((s, x) => s + x.writes, 0),
        perSecond: round(runs.reduce((s, x) => s + x.perSecond, 0)),
        p50: round(Math.max(...runs.map((x) => x.p50)), 2),
        p99: round(Math.max(...runs.map((x) => x.p99)), 2),
        errors: runs.reduce((s, x) => s + x.errors, 0),
        genCpu: runs.reduce((s, x) => s + x.genCpu, 0),
      };
      results.push({
        mode: `${mode} (wrk)`,
        objects,
        r,
        cpu: runs.reduce((s, x) => s + x.serverCpu, 0),
      });
    }
  };

  const single = await startSwitchboard();
  try {
    await run("one node", [single]);
    await runWrk("one node", [single]);
  } finally {
    await single.stop();
  }

  const nats = await startNatsCluster(3);
  const nodes: Served[] = [];
  try {
    // The bound first, on the fresh servers (the nodes' log stream not there yet).
    for (const batched of [false, true]) {
      const mode = batched ? "JetStream alone, batched" : "JetStream alone";
      ctx.log(`${mode}: ${writers} publishers over 3 servers, stream with 3 replicas`);
      const r = await runGenerator<ClusterResult>("bun", "gen/jetstream_bound_gen.ts", {
        urls: nats.urls,
        concurrency: writers,
        seconds,
        warmup,
        bytes: BOUND_BYTES,
        batched,
        stream: batched ? "boundb" : "bound",
      });
      results.push({ mode, objects: "-", r, cpu: 0 });
    }
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
    await runWrk("3 nodes", nodes);
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
    "writes/batch",
    `ms per batch: ${PHASES.join(" / ")}`,
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  for (const { mode, objects, r, cpu, phases } of results) {
    // A wrk row, and the bound, compare with one node under wrk when there is one.
    const oneNode = mode.endsWith("(wrk)") || (objects === "-" && wrk.name === "wrk")
      ? "one node (wrk)"
      : "one node";
    const base = results.find((x) =>
      x.mode === oneNode && x.objects === (objects === "-" ? many : objects)
    )!.r;
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
      cpu > 0 ? `${Math.round(cpu * 100)}%` : "-",
      r.errors,
      phases?.perBatch ?? null,
      phases ? PHASES.map((p) => phases.ms[p]).join(" / ") : null,
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
      ...(phases ? { writesPerBatch: phases.perBatch, phaseMs: phases.ms } : {}),
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
      `ms per batch: mean over the measured window of each phase (switchboard_cluster_write_phase_seconds on every node's /metrics; a retried batch counts each attempt); writes/batch: writes acknowledged per batch confirmed.`,
      `JetStream alone: the bound any design that acknowledges a write once the stream stored it reaches with ${writers} closed-loop writers here: ${writers} publishers over one connection per server, each publishing a ${BOUND_BYTES}-byte message with a message id to a stream with 3 replicas and waiting for its ack; batched: one publisher per connection sends every write waiting on it as one message. Its ratio is to one node on ${many} objects (under wrk when installed).`,
      "(wrk) rows: the same increments driven by wrk (1 thread per node, 64 keep-alive connections in all, split over the nodes); their ratio is to one node under wrk.",
    ],
  };
}
