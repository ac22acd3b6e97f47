/**
 * Where a clustered write's time goes: one histogram observation per batch and phase, so the
 * cost is a few adds per log message, not per write (docs/operations.md, "Metrics").
 */
import { registry } from "./mod.ts";
import { deferredHistogram, type HistogramChild } from "./deferred.ts";

/** The phases of a clustered batch, in the order a batch passes them. */
export const WRITE_PHASES = [
  "queued",
  "wait_apply",
  "speculate",
  "publish",
  "read",
  "apply",
  "confirm",
] as const;
/** One phase of a clustered batch. */
export type WritePhase = typeof WRITE_PHASES[number];

const phases = deferredHistogram(
  registry,
  "switchboard_cluster_write_phase_seconds",
  "Clustered writes: seconds a batch spent in each phase (queued: its writes' mean wait for " +
    "the batch; wait_apply: for an apply before speculating; speculate; publish: to the " +
    "stream's ack; read: from the ack to the apply run holding it; apply: that run's commit; " +
    "confirm: until a majority applied the log alike).",
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);
const children = new Map<WritePhase, HistogramChild>(
  WRITE_PHASES.map((phase) => [phase, phases({ phase })]),
);

/** Records that one batch spent `ms` milliseconds in `phase`. */
export function observePhase(phase: WritePhase, ms: number): void {
  children.get(phase)!.observe(ms / 1000);
}
