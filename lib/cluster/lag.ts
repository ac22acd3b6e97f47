/**
 * Event-loop lag sampler of a clustered node: a timer that should fire every `everyMs`; when it
 * fires late by more than `reportMs`, the node logs how long its JS thread was held and how
 * much CPU the process used meanwhile (CPU near the lag: the thread was busy; far below it: the
 * thread waited, on a lock, a disk flush, or for a CPU). Where Linux tells it
 * (`/proc/thread-self/schedstat`), it also logs how long the JS thread itself ran and how long
 * it was ready to run but waited for a CPU (`runq_ms`: the machine's load, not this node): the
 * rest of the hold it was blocked (a lock, the disk, a page fault). It also logs how much the
 * JS heap shrank across the hold (`heap_freed_mb`: a hold that computed and freed much is
 * likely a garbage collection). Readiness must answer within 100 ms, so a lag that long is
 * worth a warning.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { log } from "../log/mod.ts";

/** The JS thread's time on a CPU and waiting for one, in ms, or undefined where unknown. */
function threadTimes(): { run: number; runq: number } | undefined {
  try {
    const [run, runq] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
    return Number.isFinite(run) && Number.isFinite(runq)
      ? { run: run / 1e6, runq: runq / 1e6 }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the sampler; returns its stop. */
export function startLagSampler(everyMs = 50, reportMs = 100): () => void {
  let last = performance.now();
  let cpu = process.cpuUsage();
  let thread = threadTimes();
  let heap = process.memoryUsage().heapUsed;
  const timer = setInterval(() => {
    const now = performance.now();
    const lag = now - last - everyMs;
    const used = process.cpuUsage(cpu);
    const times = thread && threadTimes();
    const heapNow = process.memoryUsage().heapUsed;
    if (lag >= reportMs) {
      log.warn("event loop held", {
        lag_ms: Math.round(lag),
        cpu_ms: Math.round((used.user + used.system) / 1000),
        ...(thread && times
          ? {
            thread_cpu_ms: Math.round(times.run - thread.run),
            runq_ms: Math.round(times.runq - thread.runq),
          }
          : {}),
        heap_freed_mb: Math.max(0, Math.round((heap - heapNow) / 1e5) / 10),
      });
    }
    last = now;
    cpu = process.cpuUsage();
    thread = times ?? (thread && threadTimes());
    heap = heapNow;
  }, everyMs);
  return () => clearInterval(timer);
}
