/**
 * The parts of prom-client Switchboard uses, imported from their own files. prom-client's index
 * also loads its Pushgateway (node:http, node:https, node:zlib), Summary (tdigest) and cluster
 * aggregator, none of which Switchboard uses: in the binary that evaluation alone was about
 * 5 MB of resident memory at start (bench/README.md, "Start"). Same classes, same behaviour.
 */
import type * as client from "prom-client";
// prom-client ships types for its index only; these are the same classes the index re-exports.
import RegistryClass from "prom-client/lib/registry.js";
import CounterClass from "prom-client/lib/counter.js";
import GaugeClass from "prom-client/lib/gauge.js";
import HistogramClass from "prom-client/lib/histogram.js";
import collectDefaultMetricsFn from "prom-client/lib/defaultMetrics.js";

/** prom-client's `Registry`. */
export const Registry = RegistryClass as unknown as typeof client.Registry;
/** prom-client's `Counter`. */
export const Counter = CounterClass as unknown as typeof client.Counter;
/** prom-client's `Gauge`. */
export const Gauge = GaugeClass as unknown as typeof client.Gauge;
/** prom-client's `Histogram`. */
export const Histogram = HistogramClass as unknown as typeof client.Histogram;
/** prom-client's `collectDefaultMetrics`. */
export const collectDefaultMetrics =
  collectDefaultMetricsFn as unknown as typeof client.collectDefaultMetrics;
