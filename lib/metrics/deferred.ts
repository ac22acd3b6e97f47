/**
 * Counters and histograms for per-request and per-write hot paths. prom-client hashes the
 * label set on every `inc`/`observe`, even through a child from `labels()`: about a tenth of
 * a hot object write's CPU in a profile. Here a child is a plain object made once per label
 * set, so recording is an add; prom-client still owns the registry and the text format
 * (counters take the accumulated adds in their scrape-time `collect`, histograms answer
 * `get()` in prom-client's shape).
 */
import type * as client from "prom-client";
import { Counter } from "./prom.ts";

type Labels = Record<string, string>;

/** A counter child: `inc` adds to a number prom-client takes at the next scrape. */
export interface CounterChild {
  inc(n?: number): void;
}

/** A histogram child: `observe` counts the value into its bucket. */
export interface HistogramChild {
  observe(value: number): void;
}

/** A labelled counter in `registry`; `child(labels)` is made once per label set. */
export function deferredCounter(
  registry: client.Registry,
  name: string,
  help: string,
  labelNames: string[],
): (labels: Labels) => CounterChild {
  const pending: { labels: Labels; n: number }[] = [];
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      for (const p of pending) {
        if (p.n > 0) this.inc(p.labels, p.n);
        p.n = 0;
      }
    },
  });
  return (labels) => {
    const p = { labels, n: 0 };
    pending.push(p);
    return { inc: (n = 1) => void (p.n += n) };
  };
}

/** A labelled histogram in `registry` with the given upper bounds (seconds, ascending). */
export function deferredHistogram(
  registry: client.Registry,
  name: string,
  help: string,
  buckets: number[],
): (labels: Labels) => HistogramChild {
  const children: { labels: Labels; counts: number[]; sum: number; count: number }[] = [];
  const metric = {
    name,
    help,
    type: "histogram",
    get: () => ({
      name,
      help,
      type: "histogram",
      aggregator: "sum",
      values: children.flatMap(({ labels, counts, sum, count }) => {
        let cumulative = 0;
        return [
          ...buckets.map((le, i) => ({
            metricName: `${name}_bucket`,
            labels: { ...labels, le: String(le) },
            value: cumulative += counts[i],
          })),
          { metricName: `${name}_bucket`, labels: { ...labels, le: "+Inf" }, value: count },
          { metricName: `${name}_sum`, labels, value: sum },
          { metricName: `${name}_count`, labels, value: count },
        ];
      }),
    }),
  };
  registry.registerMetric(metric as unknown as client.Metric);
  return (labels) => {
    const child = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
    children.push(child);
    return {
      observe: (value) => {
        // A loop, not `findIndex` with a closure: every request observes one.
        for (let i = 0; i < buckets.length; i++) {
          if (value <= buckets[i]) {
            child.counts[i]++;
            break;
          }
        }
        child.sum += value;
        child.count++;
      },
    };
  };
}
