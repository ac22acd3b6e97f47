import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";

/** Placeholder until written. */
export function connections(_ctx: BenchContext): Promise<BenchReport> {
  return Promise.resolve(pending("connections", "not written yet"));
}
