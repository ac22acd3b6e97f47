import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";

/** Placeholder until written. */
export function tokens(_ctx: BenchContext): Promise<BenchReport> {
  return Promise.resolve(pending("tokens", "not written yet"));
}
