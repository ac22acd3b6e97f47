// Builds the whole server: opens the store (or joins a cluster), builds every product over it,
// mounts routes and socket endpoints, serves, and shuts down in order. The only place that
// constructs `OrderedLog`.
import { mkdirSync, statSync } from "node:fs";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { MAX_BODY_BYTES } from "./limits.ts";
import { PROTO_PROBLEM, protoProblem } from "./wire/codec.ts";
import { type App, AppRegistry } from "./config/apps.ts";
import { loadAppsFile, newDevelopmentApp } from "./config/apps_file.ts";
import { type Config, ConfigError } from "./config/config.ts";
import { Hub } from "./hub/hub.ts";
import type { DirectRoute, ProductDeps, ProductModule } from "./product.ts";
import { StoreEnv, storePath } from "./store/env.ts";
import type { Storage } from "./store/storage.ts";
import { ApiError, toApiError } from "./http/errors.ts";
import { NATIVE, RouteSurfaces, type Surface } from "./http/surfaces.ts";
import { lockDataDir } from "./store/lock.ts";
import { gaugeFrom, record, registry } from "./metrics/mod.ts";
import { log } from "./log/mod.ts";
import { tap, tapActive } from "./debug/tap.ts";
import { OrderedLog } from "./store/ordered_log.ts";
import { SocketServer } from "./socket/server.ts";
import { MAX_BUFFERED_BYTES } from "./socket/connection.ts";
import { verifyToken } from "./auth/verify.ts";
import { type RunningServer, serve } from "./runtime/mod.ts";
import { healthRoutes } from "../routes/health.ts";
import { authRoutes } from "../routes/auth.ts";
import { createObjects } from "./objects/mod.ts";
import { createPubsub } from "./pubsub/mod.ts";
import { createPusher } from "./pusher/mod.ts";
import { isPusherRestPath } from "./pusher/rest.ts";
import { createChat } from "./chat/mod.ts";
import { routeTemplate } from "./chat/rest/lazy.ts";
import { createSpaces } from "./spaces/mod.ts";
import { createShipping } from "../routes/shipping.ts";
import type { ClusterNode } from "./cluster/mod.ts";
import { createConsole } from "./console/mod.ts";
import { pusherOutboxView } from "./console/outbox.ts";
import { joinCaughtUp, minPositionReads, withPositions } from "./cluster/read_your_writes.ts";

/** A running Switchboard: the listener plus what tests and shutdown need to reach. */
export interface Switchboard {
  server: RunningServer;
  /** The port of the separate metrics listener (`--metrics-port`), when there is one. */
  metricsPort?: number;
  apps: AppRegistry;
  /** The development app when no apps file is configured. */
  devApp?: App;
  /** True when the development app was created by this start. */
  devAppCreated: boolean;
  /** Graceful stop: stop accepting, close sockets, finish writes, close LMDB. */
  shutdown(): Promise<void>;
}

/**
 * Request metrics by route template (bounded labels); every 4xx/5xx is logged (the app key is
 * public; credentials and bodies are never logged); the playground's tap sees API calls.
 */
function observe(
  method: string,
  route: string,
  path: string,
  status: number,
  ms: number,
  appKey: string | undefined,
) {
  record.http(method, route, status, ms / 1000);
  if (tapActive && appKey && !path.startsWith("/playground/") && !path.startsWith("/console/")) {
    tap(appKey, "api", { method, path, status, ms: Math.round(ms) });
  }
  if (status >= 400) {
    const fields = { method, route, status, ms: Math.round(ms * 10) / 10, app: appKey ?? null };
    if (status >= 500) log.warn("request failed", fields);
    else log.info("request refused", fields);
  }
}

/** Answers `req` through the products' direct routes when one takes it (measured and logged
 * like the router's), else through `router`. With `inflight`, counts the request there until
 * its response is produced (a direct route's in the same promise reaction as its metrics: one
 * reaction fewer on every durable write). */
function dispatch(
  req: Request,
  direct: { route: DirectRoute; surface: Surface }[],
  router: Hono,
  conn?: unknown,
  inflight?: InflightRequests,
): Response | Promise<Response> {
  const url = req.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const query = url.indexOf("?", start);
  const path = query < 0 ? url.slice(start) : url.slice(start, query);
  for (const { route, surface } of direct) {
    const call = route(req, path);
    if (!call) continue;
    const started = performance.now();
    const answered = (res: Response) => {
      inflight?.leave();
      observe(req.method, call.route, path, res.status, performance.now() - started, call.app);
      return res;
    };
    inflight?.enter();
    let answer: Promise<Response>;
    try {
      answer = call.respond();
    } catch (err) {
      return answered(surface.answer(toApiError(err, path)));
    }
    return answer.then(answered, (err) => answered(surface.answer(toApiError(err, path))));
  }
  return inflight ? inflight.track(() => router.fetch(req, conn)) : router.fetch(req, conn);
}

/** Unauthenticated paths that carry `Access-Control-Allow-Origin: *`. */
const PUBLIC_CORS_PATHS = new Set(["/healthz", "/readyz", "/"]);

/** Longest a shutdown waits for in-flight HTTP requests before closing storage anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

/** Counts HTTP requests being handled, so shutdown can wait for them. */
class InflightRequests {
  #count = 0;
  #waiters: (() => void)[] = [];

  /** Runs `handle`, counting it until its response is produced (one promise reaction per
   * request, no async frame: this wraps every request). */
  track(handle: () => Response | Promise<Response>): Response | Promise<Response> {
    this.#count++;
    let out: Response | Promise<Response>;
    try {
      out = handle();
    } catch (err) {
      this.#leave();
      throw err;
    }
    if (!(out instanceof Promise)) {
      this.#leave();
      return out;
    }
    return out.then((res) => {
      this.#leave();
      return res;
    }, (err) => {
      this.#leave();
      throw err;
    });
  }

  /** One more request in flight (`leave` when its response is produced). */
  enter(): void {
    this.#count++;
  }

  /** A request counted by `enter` has its response. */
  leave(): void {
    this.#leave();
  }

  #leave(): void {
    if (--this.#count === 0) { for (const wake of this.#waiters.splice(0)) wake(); }
  }

  /** Resolves when no request is in flight, or after `maxMs`. */
  async settled(maxMs: number): Promise<void> {
    if (this.#count === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.#waiters.push(resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs))),
    ]);
    clearTimeout(timer);
  }
}

/** Opens the store, builds every product and starts listening. */
export async function startSwitchboard(config: Config): Promise<Switchboard> {
  mkdirSync(config.dataDir, { recursive: true });
  const fileApps = config.appsFile ? loadAppsFile(config.appsFile) : undefined;
  refuseConsoleSecretClash(config.consoleSecret, fileApps ?? []);
  const unlock = lockDataDir(config.dataDir);
  let cluster: ClusterNode | undefined;
  if (config.nats) {
    registry.setDefaultLabels({ node: config.nodeId });
    // Loaded only in clustered mode: the NATS client and the replicated store would cost a
    // single node about 2 MB of memory and part of its start for nothing.
    const { openCluster } = await import("./cluster/mod.ts");
    cluster = await openCluster(config.nats, config.nodeId, storePath(config.dataDir)).catch(
      (err) => {
        unlock();
        throw err;
      },
    );
  }
  const env: Storage = cluster?.env ?? new StoreEnv(storePath(config.dataDir));
  const { apps: appList, devApp, created } = await resolveApps(env, fileApps);
  try {
    refuseConsoleSecretClash(config.consoleSecret, appList);
  } catch (err) {
    await env.close();
    await cluster?.stop();
    unlock();
    throw err;
  }
  const apps = new AppRegistry(appList);
  const hub = new Hub();
  const deps: ProductDeps = {
    config,
    apps,
    env,
    hub,
    openLog: (name, options) => new OrderedLog(env, name, options),
  };
  const pubsub = createPubsub(deps);
  const objects = createObjects(deps);
  const pusher = createPusher(deps, pubsub.service);
  const chat = createChat(deps);
  const modules: ProductModule[] = [
    objects,
    pubsub,
    pusher,
    chat,
    createSpaces(deps),
    createShipping(deps),
  ];
  // Products are built (their logs follow other nodes' writes): catch up, then serve.
  await cluster?.start(hub, modules).catch(async (err) => {
    await cluster!.stop();
    await env.close();
    unlock();
    throw err;
  });

  const http = new Hono();
  // Errors are answered in the shape of the surface whose routes matched (lib/http/surfaces.ts).
  const surfaces = new RouteSurfaces();
  // Request metrics by route template (bounded labels; chat REST's from its routes, built on
  // first use: lib/chat/rest/lazy.ts), measured around everything else;
  // every 4xx/5xx is logged (the app key is public; credentials and bodies are never logged).
  http.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    const app = c.req.header("x-app-key") ?? (c.get as (k: string) => App | undefined)("app")?.key; // Pusher REST, chat
    observe(
      c.req.method,
      routeTemplate(c),
      c.req.path,
      c.res.status,
      performance.now() - started,
      app,
    );
  });
  // Bodies are capped while they are read: an oversized request is refused (413) after
  // MAX_BODY_BYTES, never held whole in memory first.
  http.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        surfaces.of(c).answer(
          new ApiError(413, "request body too large", { code: "body_too_large" }),
        ),
    }),
  );
  // Storage (MessagePack) cannot keep an object key named __proto__: refuse it up front rather
  // than store a renamed key. Free for bodies that do not contain the text at all.
  http.use("*", async (c, next) => {
    const type = c.req.header("content-type");
    // The Pusher REST API checks its own bodies (body_md5 over the raw bytes, then __proto__).
    if (c.req.method === "GET" || isPusherRestPath(c.req.path)) return next();
    if (!type?.includes("json") || !protoProblem(await c.req.text(), type)) return next();
    return surfaces.of(c).answer(new ApiError(422, PROTO_PROBLEM));
  });
  // Public probes and the root answer any origin (a browser health check from another origin);
  // authenticated routes never do. The 404 of an unknown path gets it in notFound below.
  http.use("*", async (c, next) => {
    await next();
    if (PUBLIC_CORS_PATHS.has(c.req.path)) c.res.headers.set("Access-Control-Allow-Origin", "*");
  });
  // Clustered mode: a read may ask to wait until this node applied a position.
  if (cluster) http.use("*", minPositionReads(cluster.env));
  http.route("/", healthRoutes(env));
  gaugeFrom(
    "switchboard_lmdb_size_bytes",
    "Size of the LMDB data file.",
    () => lmdbSize(config.dataDir),
  );
  if (cluster) {
    const replicated = cluster.env;
    gaugeFrom(
      "switchboard_cluster_applied_position",
      "Position of the cluster's write log applied on this node.",
      () => replicated.applied,
    );
  }
  const metricsRoutes = new Hono().get(
    "/metrics",
    async (c) => c.body(await registry.metrics(), 200, { "content-type": registry.contentType }),
  );
  if (config.metricsPort === undefined) http.route("/", metricsRoutes);
  http.route("/", authRoutes(apps));
  // The operators' console (docs/console.md): off unless --console-secret is set.
  if (config.consoleSecret) {
    modules.push(createConsole({
      secret: config.consoleSecret,
      apps,
      nodeId: config.nodeId,
      env,
      channels: pubsub.service,
      objects: objects.store,
      chat: chat.services.store,
      outbox: pusherOutboxView(env, () => pusher.webhooks.wake()),
    }));
  }
  for (const m of modules) if (m.routes) surfaces.mount(http, m.routes, m.surface ?? NATIVE);
  http.notFound(() => {
    const res = NATIVE.answer(new ApiError(404));
    res.headers.set("Access-Control-Allow-Origin", "*");
    return res;
  });
  http.onError((err, c) => surfaces.answer(err, c));

  const sockets = new SocketServer(apps, {
    hub,
    handlers: Object.assign({}, ...modules.map((m) => m.channels ?? {})),
    verify: verifyToken,
    maxBufferedBytes: MAX_BUFFERED_BYTES,
    caughtUp: cluster &&
      ((min: unknown) => joinCaughtUp(cluster!.env, min, cluster!.env.writeDeadlineMs)),
  }, config.idleTimeoutSeconds * 1000);
  for (const m of modules) for (const endpoint of m.endpoints ?? []) sockets.addEndpoint(endpoint);
  // A node that stopped itself and rebuilt its store: what clients were told from the old one
  // is void, so they rejoin (docs/cluster-internals.md).
  cluster?.env.onRebuilt(() =>
    log.warn("cluster store rebuilt; sockets closed", { sockets: sockets.reconnectAll() })
  );
  const inflight = new InflightRequests();
  const clustered = cluster;
  const direct = modules.flatMap((m) =>
    (m.direct ?? []).map((route) => ({ route, surface: m.surface ?? NATIVE }))
  );
  let metricsServer: RunningServer | undefined;
  const server = await serve({
    port: config.port,
    hostname: config.host,
    // Clustered mode: write replies carry their log position, reads may wait for one.
    fetch: clustered
      ? (req, conn) =>
        inflight.track(() =>
          withPositions(clustered.env, req, () => dispatch(req, direct, http, conn))
        )
      : (req, conn) => dispatch(req, direct, http, conn, inflight),
    sockets,
  }).then(async (main) => {
    metricsServer = config.metricsPort === undefined ? undefined : await serve({
      port: config.metricsPort,
      hostname: config.host,
      fetch: (req) => metricsRoutes.fetch(req),
    }).catch(async (err) => {
      await main.stop();
      throw err;
    });
    return main;
  }).catch(async (err) => {
    void sockets.closeAll(0);
    for (const m of modules) await m.close?.();
    await env.close();
    await cluster?.stop();
    unlock();
    throw err;
  });
  // With `--port 0` the OS picks the port; products calling themselves (the playground's demo
  // agent) read the real one from the config.
  config.port = server.port;

  let stopping: Promise<void> | undefined;
  return {
    server,
    metricsPort: metricsServer?.port,
    apps,
    devApp,
    devAppCreated: created,
    shutdown: () =>
      stopping ??= (async () => {
        // Drain: stop accepting, let in-flight requests and commits finish, then close storage.
        // Sockets first: the runtime's listener shutdown may drop upgraded sockets without
        // their close frame, and clients act on the code (Pusher 4200: reconnect at once).
        await sockets.closeAll();
        const listenerClosed = server.stop();
        await metricsServer?.stop();
        await inflight.settled(SHUTDOWN_GRACE_MS);
        await listenerClosed;
        for (const m of modules) await m.close?.();
        await env.drain();
        await env.close();
        await cluster?.stop();
        unlock();
      })(),
  };
}

/** Bytes of the LMDB data file (0 when it cannot be read). */
function lmdbSize(dataDir: string): number {
  try {
    return statSync(storePath(dataDir)).size;
  } catch {
    return 0;
  }
}

/** Refuses to start (ConfigError) when the console secret equals an app's secret: that app's
 * owner would log in to the console as admin. */
function refuseConsoleSecretClash(secret: string | undefined, apps: App[]): void {
  const app = secret === undefined ? undefined : apps.find((a) => a.secret === secret);
  if (app) {
    throw new ConfigError(
      `--console-secret must differ from every app's secret: app "${app.id}" has the same one (its owner would open every app's console)`,
    );
  }
}

/** Apps from the file, or the development app kept in the store (created on first start). */
async function resolveApps(env: Storage, fileApps?: App[]) {
  // Each node of a cluster keeps its own development app.
  const system = env.nodeLocal<App>("system");
  if (fileApps) return { apps: fileApps, devApp: undefined, created: false };
  let devApp = system.get("dev_app");
  let created = false;
  if (!devApp) {
    devApp = newDevelopmentApp();
    await system.put("dev_app", devApp);
    created = true;
  }
  return { apps: [devApp], devApp, created };
}
