import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";

/** Placeholder until written. */
export function start(_ctx: BenchContext): Promise<BenchReport> {
  return Promise.resolve(pending("start", "not written yet"));
}
