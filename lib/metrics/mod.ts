/**
 * Prometheus metrics (prom-client), one registry per process. Layers record through the
 * small functions below, which keep a cached child per label value so a hot path pays one
 * map lookup and an add. Labels are bounded: product, protocol, route template, status class,
 * outcome; never a channel name, an id or a secret, except the given-up webhook counter's app id
 * and receiver URL (operator configuration, at most 1,000 pairs per kind) and the app id of a
 * per-app limit refusal (apps come from the apps file).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "./prom.ts";
import { deferredCounter, deferredHistogram } from "./deferred.ts";

/** The process's registry, served at `GET /metrics`. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "switchboard_" });
// Per-space heap gauges read `v8.getHeapSpaceStatistics()`, which in Bun walks the whole heap
// on the JS thread (235 ms at 2M objects): every scrape would stall every socket and request.
// The heap's total and used bytes (`switchboard_nodejs_heap_size_*`) stay.
for (const part of ["total", "used", "available"]) {
  registry.removeSingleMetric(`switchboard_nodejs_heap_space_size_${part}_bytes`);
}
// prom-client's event-loop lag reads `perf_hooks.monitorEventLoopDelay`, which Bun does not
// implement: every one of those series is NaN in the binary. Replaced by a gauge measured at
// scrape time (below), the same in both runtimes.
for (const m of registry.getMetricsAsArray()) {
  if (m.name.startsWith("switchboard_nodejs_eventloop_lag")) registry.removeSingleMetric(m.name);
}
new Gauge({
  name: "switchboard_nodejs_eventloop_lag_seconds",
  help: "Event loop lag: how late a zero-delay timer set at scrape time fired.",
  registers: [registry],
  async collect() {
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 0));
    this.set((performance.now() - started) / 1000);
  },
});

const counter = (name: string, help: string, labelNames: string[] = []) =>
  new Counter({ name, help, labelNames, registers: [registry] });

const connections = new Gauge({
  name: "switchboard_connections",
  help: "Open WebSocket connections.",
  labelNames: ["protocol"],
  registers: [registry],
});
// Both protocols have a sample from the first scrape (dashboards and alerts see 0, not "no data").
for (const protocol of ["phoenix", "pusher"]) connections.set({ protocol }, 0);
// Recorded on every write, broadcast or request: deferred (see deferred.ts).
const published = deferredCounter(
  registry,
  "switchboard_messages_published_total",
  "Broadcasts published to the hub.",
  ["product"],
);
const delivered = deferredCounter(
  registry,
  "switchboard_messages_delivered_total",
  "Broadcast frames handed to subscribers.",
  ["product"],
);
const appends = deferredCounter(
  registry,
  "switchboard_log_appends_total",
  "Entries appended to ordered logs.",
  ["product"],
);
const httpRequests = deferredCounter(
  registry,
  "switchboard_http_requests_total",
  "HTTP requests answered.",
  ["method", "route", "status"],
);
const httpDuration = deferredHistogram(
  registry,
  "switchboard_http_request_duration_seconds",
  "HTTP request duration.",
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);
const joins = counter(
  "switchboard_joins_total",
  "Channel joins by product and outcome (ok or the refusal reason's kind).",
  ["product", "outcome"],
);
const slowConsumers = counter(
  "switchboard_slow_consumer_closes_total",
  "Sockets closed with 4008 (send buffer over the bound).",
);
const replayed = counter(
  "switchboard_replay_entries_total",
  "Log entries pushed as replay on joins.",
);
const commits = new Histogram({
  name: "switchboard_lmdb_commit_seconds",
  help: "Durable write transaction latency (commit and fsync), including failed ones.",
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});
const transactions = counter(
  "switchboard_lmdb_transactions_total",
  "LMDB write transactions ended (committed or failed); batches handed over during one commit share the next.",
);
const webhooks = counter(
  "switchboard_webhook_deliveries_total",
  "Webhook delivery attempts by kind (pusher, bot) and result: delivered, retried, given_up, discarded.",
  ["kind", "result"],
);
const webhooksDropped = counter(
  "switchboard_webhook_dropped_total",
  "Webhook deliveries dropped unsent because their app's outbox was full, by kind.",
  ["kind"],
);
const webhooksGivenUp = counter(
  "switchboard_webhook_given_up_total",
  "Webhook deliveries given up after their last attempt, by kind, app id and receiver URL.",
  ["kind", "app", "url"],
);
/** Receivers counted per kind before further ones share the `url` label value `other`. */
const GIVEN_UP_MAX_RECEIVERS = 1000;
/** kind -> app id -> receiver -> given-up count (since start); what the console shows. */
const givenUp = new Map<string, Map<string, Map<string, number>>>();
/** How many (app, receiver) pairs each kind counts. */
const givenUpPairs = new Map<string, number>();

/** Given-up deliveries of `appId` in the outbox `kind`, per receiver URL, since start. */
export function webhookGivenUpCounts(kind: string, appId: string): Map<string, number> {
  return new Map(givenUp.get(kind)?.get(appId) ?? []);
}

/** Outbox readers per kind, read at scrape time. */
const outboxes = new Map<
  string,
  () => { depth: number; bytes: number; oldestAgeSeconds: number }
>();
const outboxGauge = (
  name: string,
  help: string,
  pick: (s: { depth: number; bytes: number; oldestAgeSeconds: number }) => number,
) =>
  new Gauge({
    name,
    help,
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, read] of outboxes) this.set({ kind }, pick(read()));
    },
  });
outboxGauge(
  "switchboard_webhook_outbox_depth",
  "Webhook deliveries waiting in the outbox, by kind.",
  (s) => s.depth,
);
outboxGauge(
  "switchboard_webhook_outbox_bytes",
  "Body bytes of the webhook deliveries waiting in the outbox, by kind.",
  (s) => s.bytes,
);
outboxGauge(
  "switchboard_webhook_outbox_oldest_age_seconds",
  "Age of the oldest webhook delivery waiting in the outbox (0 when empty), by kind.",
  (s) => s.oldestAgeSeconds,
);
const runs = counter("switchboard_chat_runs_total", "Chat run transitions by the state entered.", [
  "state",
]);
const tokens = counter(
  "switchboard_chat_tokens_total",
  "Tokens streamed into chat runs by agents.",
);
const limitRefusals = counter(
  "switchboard_limit_refusals_total",
  "Requests refused over a per-app limit of the apps file, by app id and limit name.",
  ["app", "limit"],
);
/** app id -> limit name -> refusals in this process (the console shows them). */
const refusalsByApp = new Map<string, Map<string, number>>();
const storageErrors = counter(
  "switchboard_storage_errors_total",
  "Commits refused by storage (disk full, I/O error).",
);

/** Memoizes children per label tuple (joined into one key). */
function cached<T>(make: (key: string) => T): (key: string) => T {
  const children = new Map<string, T>();
  return (key) => {
    let c = children.get(key);
    if (!c) children.set(key, c = make(key));
    return c;
  };
}
const publishedBy = cached((product) => published({ product }));
const deliveredBy = cached((product) => delivered({ product }));
const appendsBy = cached((product) => appends({ product }));
/** Request counter children per method, route and status class; duration children per method
 * and route (NUL-joined keys). */
const requestsBy = cached((key) => {
  const [method, route, status] = key.split("\u0000");
  return httpRequests({ method, route, status });
});
const durationBy = cached((key) => {
  const [method, route] = key.split("\u0000");
  return httpDuration({ method, route });
});

/** Per method and route: the duration child and the request counters by status class. */
const httpMeters = new Map<
  string,
  Map<string, { duration: { observe(s: number): void }; byClass: { inc(): void }[] }>
>();

/** The products' topic prefixes, as constant strings (cheap map keys). */
const PRODUCTS = ["durable", "pubsub", "chat", "spaces"];

/** The metric label of a topic's product (`durable`, `pubsub`, `chat`, `spaces`; another
 * short one as it is; a missing or long one `other`, so labels stay few). */
function productLabel(product: string | null): string {
  // Every write and broadcast asks: the known products are matched by equality.
  for (const p of PRODUCTS) if (product === p) return p;
  return product === null || product.length >= 16 ? "other" : product;
}

/** Record functions used by the layers. */
export const record = {
  /** A broadcast on a topic of `product` that reached `subscribers` sockets. */
  publish(product: string, subscribers: number): void {
    const label = productLabel(product);
    publishedBy(label).inc();
    if (subscribers > 0) deliveredBy(label).inc(subscribers);
  },
  /** `count` entries appended to a stream of `product`. */
  append(product: string, count: number): void {
    appendsBy(productLabel(product)).inc(count);
  },
  /** A socket of `protocol` (`phoenix`, `pusher`) opened (+1) or closed (-1). */
  connection(delta: 1 | -1, protocol: "phoenix" | "pusher" = "phoenix"): void {
    connections.inc({ protocol }, delta);
  },
  /** A join of a topic of `product` (null: the topic did not parse) and its outcome: `ok`, or
   * the refusal reason (reduced to its kind: the text before `:`). */
  join(product: string | null, reason?: string): void {
    const outcome = reason === undefined ? "ok" : reason.split(":")[0].slice(0, 64);
    joins.inc({ product: productLabel(product), outcome });
  },
  /** A slow subscriber closed with 4008. */
  slowConsumer(): void {
    slowConsumers.inc();
  },
  /** Entries pushed as replay. */
  replay(count: number): void {
    replayed.inc(count);
  },
  /** One commit's duration; `failed` when storage refused it. */
  commit(seconds: number, failed: boolean): void {
    commits.observe(seconds);
    if (failed) storageErrors.inc();
  },
  /** One LMDB write transaction ended (lmdb-js's `aftercommit`). */
  transaction(): void {
    transactions.inc();
  },
  /** A chat run entered `state` (pending, active, suspended, complete, cancelled, error). */
  run(state: string): void {
    runs.inc({ state });
  },
  /** One token pushed into a run. */
  token(): void {
    tokens.inc();
  },
  /** One webhook attempt's result, by outbox kind (`pusher`, `bot`). */
  webhook(kind: string, result: "delivered" | "retried" | "given_up" | "discarded"): void {
    webhooks.inc({ kind, result });
  },
  /** One webhook delivery given up after its last attempt, by kind, app id and receiver URL
   * (at most `GIVEN_UP_MAX_RECEIVERS` pairs per kind; later ones are counted as `other`). */
  webhookGivenUp(kind: string, appId: string, url: string): void {
    let apps = givenUp.get(kind);
    if (!apps) givenUp.set(kind, apps = new Map());
    let urls = apps.get(appId);
    if (!urls) apps.set(appId, urls = new Map());
    if (!urls.has(url)) {
      const pairs = givenUpPairs.get(kind) ?? 0;
      if (pairs >= GIVEN_UP_MAX_RECEIVERS) url = "other";
      if (!urls.has(url)) givenUpPairs.set(kind, pairs + 1);
    }
    urls.set(url, (urls.get(url) ?? 0) + 1);
    webhooksGivenUp.inc({ kind, app: appId, url });
  },
  /** `count` webhook deliveries dropped unsent (their app's outbox was full). */
  webhookDropped(kind: string, count: number): void {
    webhooksDropped.inc({ kind }, count);
  },
  /** Serves the outbox gauges of `kind` from `read` (the latest outbox of a kind wins). */
  webhookOutbox(
    kind: string,
    read: () => { depth: number; bytes: number; oldestAgeSeconds: number },
  ): void {
    outboxes.set(kind, read);
    webhooksDropped.inc({ kind }, 0);
    for (const result of ["delivered", "retried", "given_up"] as const) {
      webhooks.inc({ kind, result }, 0);
    }
  },
  /** A request of the app `appId` refused over its per-app limit `limit` (a bounded label:
   * apps come from the apps file). */
  limit(appId: string, limit: string): void {
    limitRefusals.inc({ app: appId, limit });
    let m = refusalsByApp.get(appId);
    if (!m) refusalsByApp.set(appId, m = new Map());
    m.set(limit, (m.get(limit) ?? 0) + 1);
  },
  /** One answered HTTP request; `route` is the matched route template. */
  http(method: string, route: string, status: number, seconds: number): void {
    // Looked up by method, then route (no key string built per request).
    let routes = httpMeters.get(method);
    if (!routes) httpMeters.set(method, routes = new Map());
    let m = routes.get(route);
    if (!m) routes.set(route, m = { duration: durationBy(`${method}\u0000${route}`), byClass: [] });
    const cls = Math.floor(status / 100);
    (m.byClass[cls] ??= requestsBy(`${method}\u0000${route}\u0000${cls}xx`)).inc();
    m.duration.observe(seconds);
  },
};

/** Refusals of the app `appId` over each per-app limit in this process, by limit name. */
export function limitRefusalCounts(appId: string): Record<string, number> {
  return Object.fromEntries(refusalsByApp.get(appId) ?? []);
}

/** Adds a gauge whose value is read at scrape time (e.g. the LMDB file size). */
export function gaugeFrom(name: string, help: string, read: () => number): void {
  registry.removeSingleMetric(name); // a second server in one process replaces the reader
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}
