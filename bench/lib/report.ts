// Types shared by the benchmark drivers and the runner.

/** What every benchmark driver gets from the runner. */
export interface BenchContext {
  /** BENCH_QUICK=1: every size about 10x smaller, short windows. */
  quick: boolean;
  /** "source" (deno run main.ts) or "binary" (SWITCHBOARD_BIN). */
  mode: "source" | "binary";
  /** Scales a size for quick mode (about 10x smaller, at least `min`). */
  size(n: number, min?: number): number;
  /** Measurement window in seconds for quick or full mode. */
  seconds(full: number, quick?: number): number;
  /** Progress output. */
  log(msg: string): void;
}

/** One benchmark's outcome, as printed and written to results/latest.json. */
export interface BenchReport {
  name: string;
  status: "ok" | "pending" | "error";
  /** Column names of `rows` as printed. */
  columns: string[];
  rows: (string | number | null)[][];
  /** Machine-readable figures. */
  data: Record<string, unknown>[];
  notes: string[];
  seconds?: number;
}

/** A report for a product that has not landed yet. */
export function pending(name: string, why: string): BenchReport {
  return { name, status: "pending", columns: [], rows: [], data: [], notes: [`PENDING: ${why}`] };
}

/**
 * Verdict on who limited a run: the generator when it saturated its core and the server did
 * not; the server when it saturated its core (`serverCpu`: the share of a single-threaded
 * server's main thread, `CpuMeter.thread`, where one is measured); "machine" when all cores
 * were busy (server, generator and kernel loopback work share the cores) and neither process
 * alone was.
 */
export function bottleneck(genCpu: number, serverCpu: number, machine = NaN): string {
  if (genCpu >= 0.9 && !(serverCpu >= 0.9)) return "generator";
  if (serverCpu >= 0.9) return "server";
  if (machine >= 0.9) return "machine";
  return "-";
}

/** "87%" from 0.87, "-" for NaN. */
export function pct(x: number): string {
  return Number.isNaN(x) ? "-" : `${Math.round(x * 100)}%`;
}
