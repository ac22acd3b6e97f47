// Small statistics and table helpers shared by the benchmark drivers and generators.
// Plain TypeScript with no runtime-specific APIs, so Bun generators import it too.

/** Percentile (0..100) of an unsorted sample by nearest rank; NaN when empty. */
export function percentile(values: number[] | Float64Array, p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** p50 and p99 of a sample, rounded to 0.01 ms. */
export function latencySummary(values: number[] | Float64Array): { p50: number; p99: number } {
  return { p50: round(percentile(values, 50), 2), p99: round(percentile(values, 99), 2) };
}

/** Rounds to `digits` decimals (NaN stays NaN). */
export function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** A bounded reservoir so a long run keeps a fair latency sample without unbounded memory. */
export class Reservoir {
  readonly values: number[] = [];
  #seen = 0;
  constructor(readonly capacity = 200_000) {}

  /** Adds one observation. */
  add(v: number): void {
    this.#seen++;
    if (this.values.length < this.capacity) this.values.push(v);
    else {
      const j = Math.floor(Math.random() * this.#seen);
      if (j < this.capacity) this.values[j] = v;
    }
  }

  /** Observations seen (not only those kept). */
  get seen(): number {
    return this.#seen;
  }
}

/** Human formatting of a number: 1234567 -> "1.23M", 12345 -> "12.3k". */
export function human(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return "-";
  const a = Math.abs(n);
  if (a >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  if (a >= 100) return String(Math.round(n));
  return String(round(n, 2));
}

/** Renders rows as an aligned text table with the given columns. */
export function table(columns: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === "number" ? human(c) : c ?? "-")));
  const widths = columns.map((c, i) =>
    Math.max(c.length, ...cells.map((r) => String(r[i] ?? "").length))
  );
  const line = (r: string[]) => r.map((c, i) => String(c).padEnd(widths[i])).join("  ").trimEnd();
  return [
    line(columns),
    line(widths.map((w) => "-".repeat(w))),
    ...cells.map((r) => line(r as string[])),
  ].join("\n");
}
