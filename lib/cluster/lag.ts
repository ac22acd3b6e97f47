/**
 * Event-loop lag sampler of a clustered node: when a timer due every `everyMs` fires more than
 * `reportMs` late, logs how long the JS thread was held, the process's CPU meanwhile (near the
 * lag: busy; far below: waiting), where Linux tells it the thread's own run and run-queue time
 * (`runq_ms`: the machine's load), and the heap freed (`heap_freed_mb`: likely a GC).
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
