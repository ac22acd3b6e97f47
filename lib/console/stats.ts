/**
 * The console's charts: the last hour in memory, one point per `STEP_MS`. The node's series
 * are read from the same prom-client metrics as `/metrics` (connections, messages published
 * and delivered, joins refused, webhook results, HTTP latency histogram); the per-app series
 * count the same call sites through the debug tap's sink (the metrics carry no app label).
 * Also keeps each app's last webhook result per URL (the outbox view shows it).
 */
import type { AppRegistry } from "../config/apps.ts";
import { addTapSink, type TapKind } from "../debug/tap.ts";
import { registry } from "../metrics/mod.ts";

/** Width of one point. */
export const STEP_MS = 10_000;
/** Points kept: one hour. */
export const POINTS = 360;

/** The series of one chart set: `t` (unix ms of each point's start) and one array per name. */
export type Series = Record<string, number[]>;

/** The names of every series (the same for an app and for the node). */
export const SERIES = [
  "connections",
  "published",
  "delivered",
  "joins_refused",
  "webhooks_ok",
  "webhooks_failed",
  "http_p99_ms",
] as const;

/** The last webhook attempt to one URL. */
export interface WebhookResult {
  url: string;
  at: number;
  attempt: number;
  /** The HTTP status, or the network error's message. */
  status: number | string;
  ok: boolean;
  /** The last failed attempt, if any since start. */
  lastError?: { at: number; status: number | string; attempt: number };
}

/** Counts of one app in the current interval. */
class AppCounts {
  connections = 0;
  published = 0;
  delivered = 0;
  joinsRefused = 0;
  webhooksOk = 0;
  webhooksFailed = 0;
  /** Request durations (ms) in this interval, at most `MAX_SAMPLES` (a uniform sample). */
  ms: number[] = [];
  series: Series = emptySeries();
  webhooks = new Map<string, WebhookResult>();
}

const MAX_SAMPLES = 2000;

function emptySeries(): Series {
  return Object.fromEntries([["t", []], ...SERIES.map((s) => [s, []])]);
}

/** Appends one point to `series`, dropping the oldest past `POINTS`. */
function push(series: Series, t: number, values: Record<string, number>) {
  series.t.push(t);
  for (const name of SERIES) series[name].push(values[name] ?? 0);
  if (series.t.length > POINTS) { for (const k of Object.keys(series)) series[k].shift(); }
}

/** The 99th percentile of `values` (0 for none). */
function p99(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
}

/** Per-app and node series; see the module comment. */
export class ConsoleStats {
  #apps = new Map<string, AppCounts>();
  #registry: AppRegistry;
  #node: Series = emptySeries();
  #nodeLast: Record<string, number> = {};
  #bucketsLast = new Map<number, number>();
  #start = Date.now();
  #timer: ReturnType<typeof setInterval>;
  #stopSink: () => void;

  #onNodePoint?: (t: number, point: Record<string, number>) => void;

  /** `onNodePoint` gets each finished node point (the cluster view stores it). */
  constructor(apps: AppRegistry, onNodePoint?: (t: number, point: Record<string, number>) => void) {
    this.#registry = apps;
    this.#onNodePoint = onNodePoint;
    this.#stopSink = addTapSink((key, kind, fields) => this.#count(key, kind, fields));
    void this.#sampleNode(true);
    this.#timer = setInterval(() => void this.#tick(), STEP_MS);
    (this.#timer as unknown as { unref?: () => void }).unref?.();
  }

  /** Stops counting and sampling. */
  close(): void {
    clearInterval(this.#timer);
    this.#stopSink();
  }

  /** The app's series plus the current, partial point. */
  app(appKey: string): Series {
    const c = this.#counts(appKey);
    const out = structuredClone(c.series);
    push(out, this.#start, this.#appPoint(c));
    return out;
  }

  /** The node's series plus the current, partial point (read from the metrics now). */
  async node(): Promise<Series> {
    const point = await this.#sampleNode(false);
    const out = structuredClone(this.#node);
    push(out, this.#start, point);
    return out;
  }

  /** The last webhook result per URL of an app. */
  webhooks(appKey: string): WebhookResult[] {
    return [...(this.#apps.get(appKey)?.webhooks.values() ?? [])];
  }

  #counts(key: string): AppCounts {
    let c = this.#apps.get(key);
    if (!c) this.#apps.set(key, c = new AppCounts());
    return c;
  }

  /** The tap sink: one counter bump per call site. */
  #count(key: string, kind: TapKind, f: Record<string, unknown>) {
    const c = this.#apps.get(key) ?? (this.#registry.byKey(key) ? this.#counts(key) : undefined);
    if (!c) return;
    switch (kind) {
      case "event":
        // As switchboard_messages_published_total counts: broadcasts that reached a topic
        // with subscribers.
        if (typeof f.subscribers === "number" && f.subscribers > 0) {
          c.published++;
          c.delivered += f.subscribers;
        }
        break;
      case "connection":
        c.connections += f.what === "opened" ? 1 : -1;
        break;
      case "join":
        if (f.outcome !== "ok") c.joinsRefused++;
        break;
      case "api":
        if (c.ms.length < MAX_SAMPLES) c.ms.push(f.ms as number);
        else c.ms[Math.floor(Math.random() * MAX_SAMPLES)] = f.ms as number;
        break;
      case "webhook": {
        const ok = typeof f.status === "number" && f.status >= 200 && f.status < 300;
        if (ok) c.webhooksOk++;
        else c.webhooksFailed++;
        const url = String(f.url);
        const at = Date.now();
        const attempt = Number(f.attempt);
        const status = f.status as number | string;
        const before = c.webhooks.get(url);
        if (!before && c.webhooks.size >= 100) return;
        c.webhooks.set(url, {
          url,
          at,
          attempt,
          status,
          ok,
          lastError: ok ? before?.lastError : { at, status, attempt },
        });
      }
    }
  }

  #appPoint(c: AppCounts): Record<string, number> {
    return {
      connections: Math.max(0, c.connections),
      published: c.published,
      delivered: c.delivered,
      joins_refused: c.joinsRefused,
      webhooks_ok: c.webhooksOk,
      webhooks_failed: c.webhooksFailed,
      http_p99_ms: p99(c.ms),
    };
  }

  async #tick() {
    const t = this.#start;
    this.#start = Date.now();
    for (const c of this.#apps.values()) {
      push(c.series, t, this.#appPoint(c));
      c.published =
        c.delivered =
        c.joinsRefused =
        c.webhooksOk =
        c.webhooksFailed =
          0;
      c.ms = [];
    }
    const point = await this.#sampleNode(true);
    push(this.#node, t, point);
    this.#onNodePoint?.(t, point);
  }

  /** The node's point since the last tick; `advance` makes now the next point's base. */
  async #sampleNode(advance: boolean): Promise<Record<string, number>> {
    const sum = async (name: string, keep?: (labels: Record<string, unknown>) => boolean) => {
      const metric = registry.getSingleMetric(name);
      if (!metric) return 0;
      const { values } = await metric.get();
      return values.filter((v) => !keep || keep(v.labels)).reduce((n, v) => n + v.value, 0);
    };
    const now: Record<string, number> = {
      connections: await sum("switchboard_connections"),
      published: await sum("switchboard_messages_published_total"),
      delivered: await sum("switchboard_messages_delivered_total"),
      joins_refused: await sum("switchboard_joins_total", (l) => l.outcome !== "ok"),
      webhooks_ok: await sum(
        "switchboard_webhook_deliveries_total",
        (l) => l.result === "delivered",
      ),
      webhooks_failed: await sum(
        "switchboard_webhook_deliveries_total",
        (l) => l.result !== "delivered",
      ),
    };
    // The latency histogram: cumulative counts per bucket bound, summed over routes.
    const buckets = new Map<number, number>();
    const hist = registry.getSingleMetric("switchboard_http_request_duration_seconds");
    if (hist) {
      for (const v of (await hist.get()).values) {
        if (!(v as { metricName?: string }).metricName?.endsWith("_bucket")) continue;
        const le = v.labels.le === "+Inf" ? Infinity : Number(v.labels.le);
        buckets.set(le, (buckets.get(le) ?? 0) + v.value);
      }
    }
    const point: Record<string, number> = { connections: now.connections };
    for (const k of ["published", "delivered", "joins_refused", "webhooks_ok", "webhooks_failed"]) {
      point[k] = Math.max(0, now[k] - (this.#nodeLast[k] ?? 0));
    }
    const bounds = [...buckets.keys()].sort((a, b) => a - b);
    const delta = (le: number) => (buckets.get(le) ?? 0) - (this.#bucketsLast.get(le) ?? 0);
    const total = bounds.length ? delta(Infinity) : 0;
    point.http_p99_ms = 0;
    if (total > 0) {
      const bound = bounds.find((le) => delta(le) >= total * 0.99) ?? Infinity;
      // Past the largest finite bucket the latency is only known to be above it.
      const finite = bounds.filter((b) => b !== Infinity);
      point.http_p99_ms = (bound === Infinity ? finite[finite.length - 1] ?? 0 : bound) * 1000;
    }
    if (advance) {
      this.#nodeLast = now;
      this.#bucketsLast = buckets;
    }
    return point;
  }
}
