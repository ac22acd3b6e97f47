import { type BenchContext, type BenchReport, pending } from "../lib/report.ts";

/** Placeholder until written. */
export function writes(_ctx: BenchContext): Promise<BenchReport> {
  return Promise.resolve(pending("writes", "not written yet"));
}
