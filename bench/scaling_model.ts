// The clustered mode's scaling model on paper (docs/cluster-scaling.md): prints, from the named
// constants below, the write rate a cluster of N nodes on separate machines would carry with
// one log for all writes (today's design) and with S per-stream logs and H home nodes per
// stream, and which bound holds it. Pure computation: it runs nothing and measures nothing.
//   deno run bench/scaling_model.ts
// Constants marked MEASURED come from bench/results/ (file named beside each); those marked
// ESTIMATE are assumptions of the model, stated in docs/cluster-scaling.md, not measurements.

/** Writes per batch (one batch is one log message). MEASURED: 8.3-8.4 (2026-11-28-cluster-where-the-ms-go.md, S1/S2, 10k objects). */
export const WRITES_PER_BATCH = 8;

/** Writes/s one node commits, the cost every full replica pays for every write. MEASURED: 24.5k, the one-node durable median on 10k objects (2026-11-26-writes-issue39-pass6.md). */
export const APPLY_PER_NODE = 25_000;

/** Acknowledged publishes/s one stream leader carries at one replica. MEASURED: 45.2k (JetStream peer, 64 writers, 10k subjects, 2026-11-25-issue18-changes.md; loaded machine: a floor). */
export const LEADER_OPS = 45_000;

/** Leader work of one replicated publish (R = 3), in units of one unreplicated publish. ESTIMATE. */
export const PUBLISH_UNITS = 2;

/** Leader work of one read of a position by one node (a direct get), in the same units. ESTIMATE. */
export const READ_UNITS = 1;

/** Bytes a write adds to a log message (its keys read and written, values, ids). ESTIMATE. */
export const BYTES_PER_WRITE = 500;

/** Bytes/s one machine's network link sends (1 Gbit/s). ESTIMATE of the deployment. */
export const LINK_BYTES = 125_000_000;

/** Replicas of each JetStream stream. The cluster's setting (3). */
export const REPLICAS = 3;

/** Home nodes per stream in the per-stream design (nodes that hold and apply its log). ESTIMATE of the design. */
export const HOMES = 3;

/** The bounds (writes/s) of one design at one size, and the least of them. */
export interface Bounds {
  apply: number;
  leader: number;
  network: number;
  rate: number;
  bound: string;
}

/** The least of named bounds, with its name. */
function least(b: Omit<Bounds, "rate" | "bound">): Bounds {
  const [bound, rate] = Object.entries(b).sort((x, y) => x[1] - y[1])[0];
  return { ...b, rate, bound };
}

/**
 * One log, every node a full replica: every node applies every write, the one leader takes
 * every publish and one read per node per position, and its link carries each message to the
 * other replicas and to every node.
 */
export function oneLog(nodes: number): Bounds {
  const b = WRITES_PER_BATCH;
  return least({
    apply: APPLY_PER_NODE,
    leader: (b * LEADER_OPS) / (PUBLISH_UNITS + READ_UNITS * nodes),
    network: LINK_BYTES / (BYTES_PER_WRITE * (REPLICAS - 1 + nodes)),
  });
}

/**
 * Per-stream logs (many more streams than servers, hashed evenly), leaders spread over one
 * server per node, each stream applied by its HOMES home nodes only: a node applies HOMES/N of
 * the writes, a server leads 1/N of the positions (each read by its home nodes) and follows
 * REPLICAS-1 of them per N, and its link sends 1/N of the copies.
 */
export function perStreamLogs(nodes: number): Bounds {
  const b = WRITES_PER_BATCH;
  const homes = Math.min(HOMES, nodes);
  const perPosition = PUBLISH_UNITS + READ_UNITS * homes + READ_UNITS * (REPLICAS - 1);
  return least({
    apply: (APPLY_PER_NODE * nodes) / homes,
    leader: (b * LEADER_OPS * nodes) / perPosition,
    network: (LINK_BYTES * nodes) / (BYTES_PER_WRITE * (REPLICAS - 1 + homes)),
  });
}

/** One stream id (one object, channel or thread) in the per-stream design: one log, its homes. */
export function oneStream(): Bounds {
  const b = WRITES_PER_BATCH;
  return least({
    apply: APPLY_PER_NODE,
    leader: (b * LEADER_OPS) / (PUBLISH_UNITS + READ_UNITS * HOMES),
    network: LINK_BYTES / (BYTES_PER_WRITE * (REPLICAS - 1 + HOMES)),
  });
}

/**
 * The cycle of one node's batches today (one batch out per node, the next once the last is
 * applied here): writes/s = nodes x writes per batch / (applyWait + spec + publish + read +
 * apply). MEASURED phases, mean ms per write (2026-11-28-cluster-where-the-ms-go.md, 10k
 * objects, 3 nodes on the loaded 2-core machine), with the rate the benchmark measured.
 */
export const CYCLES = [
  { round: "S1", writesPerBatch: 8.4, phasesMs: [32.4, 6.9, 17.2, 18.6, 37.4], measured: 245 },
  { round: "S2", writesPerBatch: 8.3, phasesMs: [8.1, 6.1, 13.2, 15.9, 13.7], measured: 433 },
];

/** Writes/s of `nodes` nodes whose batches of `writesPerBatch` each take `cycleMs`. */
export function cycleRate(nodes: number, writesPerBatch: number, cycleMs: number): number {
  return (nodes * writesPerBatch * 1000) / cycleMs;
}

/** `12.3k` for 12,300. */
function k(n: number): string {
  return `${(n / 1000).toFixed(1)}k`;
}

if (import.meta.main) {
  console.log("Today's cycle, 3 nodes on one loaded 2-core machine (MEASURED phases):");
  for (const c of CYCLES) {
    const ms = c.phasesMs.reduce((a, x) => a + x, 0);
    const rate = cycleRate(3, c.writesPerBatch, ms);
    console.log(
      `  ${c.round}: cycle ${ms.toFixed(1)} ms, model ${
        rate.toFixed(0)
      } writes/s, measured ${c.measured}`,
    );
  }
  console.log("\nSeparate machines (ESTIMATES):");
  const rows = [["Design", "Nodes", "apply", "leader", "network", "writes/s", "bound by"]];
  for (const n of [3, 5, 10]) {
    const r = oneLog(n);
    rows.push(["one log", `${n}`, k(r.apply), k(r.leader), k(r.network), k(r.rate), r.bound]);
  }
  for (const n of [3, 5, 10]) {
    const r = perStreamLogs(n);
    rows.push([
      `per-stream logs, ${HOMES} homes`,
      `${n}`,
      k(r.apply),
      k(r.leader),
      k(r.network),
      k(r.rate),
      r.bound,
    ]);
  }
  const s = oneStream();
  rows.push([
    "one stream id, its homes",
    "any",
    k(s.apply),
    k(s.leader),
    k(s.network),
    k(s.rate),
    s.bound,
  ]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) {
    console.log(r.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  "));
  }
  console.log(
    "\nEstimates from the constants in bench/scaling_model.ts (see docs/cluster-scaling.md), not measurements.",
  );
}
