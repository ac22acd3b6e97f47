/**
 * Event-loop lag sampler of a clustered node: a timer that should fire every `everyMs`; when it
 * fires late by more than `reportMs`, the node logs how long its JS thread was held and how
 * much CPU the process used meanwhile (CPU near the lag: the thread was busy; far below it: the
 * thread waited, on a lock, a disk flush, or for a CPU). Readiness must answer within 100 ms,
 * so a lag that long is worth a warning.
 */
import process from "node:process";
import { log } from "../log/mod.ts";

/** Starts the sampler; returns its stop. */
export function startLagSampler(everyMs = 50, reportMs = 100): () => void {
  let last = performance.now();
  let cpu = process.cpuUsage();
  const timer = setInterval(() => {
    const now = performance.now();
    const lag = now - last - everyMs;
    const used = process.cpuUsage(cpu);
    if (lag >= reportMs) {
      log.warn("event loop held", {
        lag_ms: Math.round(lag),
        cpu_ms: Math.round((used.user + used.system) / 1000),
      });
    }
    last = now;
    cpu = process.cpuUsage();
  }, everyMs);
  return () => clearInterval(timer);
}
