import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";

/** Placeholder until written. */
export function replay(_ctx: BenchContext): Promise<BenchReport> {
  return Promise.resolve(pending("replay", "not written yet"));
}
