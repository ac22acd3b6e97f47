/**
 * The console's cluster view (clustered mode only): every node writes its node-level chart
 * point (see stats.ts) once per interval into the replicated store (database
 * `console:node_points`, key `[nodeId, t]`, dropping its own points older than an hour in the
 * same write), so any node's console reads every node's series from its own replica and sums
 * them. One small write per node per interval; a node that is down simply stops adding points.
 */
import type { Table } from "../store/table.ts";
import type { Storage } from "../store/storage.ts";
import { errorFields, log } from "../log/mod.ts";
import { POINTS, SERIES, type Series, STEP_MS } from "./stats.ts";

/** The series of every node, and their sum per interval. */
export interface ClusterSeries {
  nodes: Record<string, Series>;
  /** Per interval: counts summed over nodes; `http_p99_ms` is the largest node's p99. */
  sum: Series;
}

/** Reads and writes the nodes' points; see the module comment. */
export class ClusterPoints {
  #env: Storage;
  #db: Table<Record<string, number>>;
  #nodeId: string;

  constructor(env: Storage, nodeId: string) {
    this.#env = env;
    this.#db = env.db<Record<string, number>>("console:node_points");
    this.#nodeId = nodeId;
  }

  /** Stores this node's point for the interval starting at `t` (failures are logged only). */
  async add(t: number, point: Record<string, number>): Promise<void> {
    const node = this.#nodeId;
    const oldest = t - POINTS * STEP_MS;
    try {
      await this.#env.transaction(() => {
        for (const key of this.#db.getKeys({ start: [node], end: [node, oldest] })) {
          this.#db.remove(key);
        }
        this.#db.put([node, t], point);
      });
    } catch (err) {
      log.debug("console: node point not stored", { ...errorFields(err) });
    }
  }

  /** Every node's series of the last hour and their sum, intervals aligned to `STEP_MS`. */
  read(now = Date.now()): ClusterSeries {
    const since = now - POINTS * STEP_MS;
    const byNode = new Map<string, [number, Record<string, number>][]>();
    for (const { key, value } of this.#db.getRange({ limit: 100 * POINTS })) {
      const [node, t] = key as [string, number];
      if (t < since) continue;
      let list = byNode.get(node);
      if (!list) byNode.set(node, list = []);
      list.push([t, value]);
    }
    const nodes: Record<string, Series> = {};
    const buckets = new Map<number, Record<string, number>>();
    for (const [node, list] of [...byNode].sort((a, b) => a[0].localeCompare(b[0]))) {
      const series: Series = Object.fromEntries([["t", []], ...SERIES.map((s) => [s, []])]);
      for (const [t, point] of list) {
        series.t.push(t);
        for (const s of SERIES) series[s].push(point[s] ?? 0);
        const b = Math.floor(t / STEP_MS) * STEP_MS;
        const sum = buckets.get(b) ?? {};
        for (const s of SERIES) {
          sum[s] = s === "http_p99_ms"
            ? Math.max(sum[s] ?? 0, point[s] ?? 0)
            : (sum[s] ?? 0) + (point[s] ?? 0);
        }
        buckets.set(b, sum);
      }
      nodes[node] = series;
    }
    const sum: Series = Object.fromEntries([["t", []], ...SERIES.map((s) => [s, []])]);
    for (const [t, point] of [...buckets].sort((a, b) => a[0] - b[0])) {
      sum.t.push(t);
      for (const s of SERIES) sum[s].push(point[s]);
    }
    return { nodes, sum };
  }
}
