/**
 * The operators' console (docs/console.md): its routes under
 * `/console/`, built only when `--console-secret` is set. The page and its assets and the
 * login are public; every other `/console/` path needs a session (401 without) and each app's
 * data needs a session that may open that app (404 otherwise, as for an unknown app).
 * State-changing requests must come from the console's own origin (403 otherwise).
 */
import { type Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { App, AppRegistry } from "../config/apps.ts";
import { limitsOf } from "./limits.ts";
import type { ProductModule } from "../product.ts";
import {
  COOKIE,
  LoginLimiter,
  maskSecret,
  mayOpen,
  sameOrigin,
  type Session,
  SESSION_TTL_MS,
  Sessions,
  storedEndedSessions,
} from "./session.ts";
import { peerAddress } from "./peer.ts";
import { Browse, BrowseError, type BrowseSources } from "./browse.ts";
import type { OutboxView } from "./outbox.ts";
import { ConsoleStats } from "./stats.ts";
import { ClusterPoints } from "./cluster_stats.ts";
import { liveStream } from "./live.ts";
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from "./page.ts";
import { webhookGivenUpCounts } from "../metrics/mod.ts";

/** What the console is built from. */
export interface ConsoleOptions extends BrowseSources {
  secret: string;
  apps: AppRegistry;
  outbox: OutboxView;
  /** This node's name (shown on the page). */
  nodeId: string;
}

type Env = { Variables: { session: Session; app: App } };

/** Headers of the page and its assets: no caching, no framing, only our own scripts. */
const PAGE_HEADERS = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
};

/** Builds the console as a module the server mounts (routes) and shuts down (close). */
export function createConsole(opts: ConsoleOptions): ProductModule {
  const sessions = new Sessions(
    opts.secret,
    opts.apps,
    SESSION_TTL_MS,
    storedEndedSessions(opts.env),
  );
  const limiter = new LoginLimiter();
  // In clustered mode every node's points are kept in the replicated store (cluster_stats.ts).
  const cluster = opts.env.remote ? new ClusterPoints(opts.env, opts.nodeId) : undefined;
  const stats = new ConsoleStats(opts.apps, cluster && ((t, point) => void cluster.add(t, point)));
  const browse = new Browse(opts);
  const r = new Hono<Env>();
  const err = (c: Context, status: 400 | 401 | 403 | 404 | 429, error: string) =>
    c.json({ error }, status, { "cache-control": "no-store" });

  // Every console answer (JSON, errors, redirects, the event stream) says: never sniff it.
  const nosniff = async (c: Context, next: () => Promise<void>) => {
    await next();
    c.res.headers.set("x-content-type-options", "nosniff");
  };
  r.use("/console", nosniff);
  r.use("/console/*", nosniff);

  r.get("/console", (c) => c.redirect("/console/", 302));
  r.get("/console/", (c) => c.html(CONSOLE_HTML, 200, PAGE_HEADERS));
  r.get(
    "/console/console.js",
    (c) =>
      c.body(CONSOLE_JS, 200, {
        ...PAGE_HEADERS,
        "content-type": "text/javascript; charset=utf-8",
      }),
  );
  r.get(
    "/console/console.css",
    (c) => c.body(CONSOLE_CSS, 200, { ...PAGE_HEADERS, "content-type": "text/css; charset=utf-8" }),
  );

  // Every POST must come from the console's own origin (with SameSite=Strict: CSRF-safe).
  r.post("/console/*", async (c, next) => {
    if (!sameOrigin(c.req.raw.headers, new URL(c.req.url).protocol)) {
      return err(c, 403, "cross-site request refused");
    }
    await next();
  });

  r.post("/console/login", async (c) => {
    const peer = peerAddress(c.req.raw, c.env);
    const wait = limiter.retryAfter(peer);
    if (wait > 0) {
      c.header("retry-after", String(wait));
      return err(c, 429, "too many failed logins: try again later");
    }
    const secret = await secretOf(c);
    const session = secret ? sessions.login(secret) : undefined;
    if (!session) {
      limiter.failed(peer);
      return err(c, 401, "wrong secret");
    }
    setCookie(c, COOKIE, sessions.cookie(session), {
      path: "/console",
      httpOnly: true,
      sameSite: "Strict",
      secure: new URL(c.req.url).protocol === "https:" ||
        c.req.header("x-forwarded-proto") === "https",
      maxAge: Math.floor((session.expires - Date.now()) / 1000),
    });
    return c.json({ admin: session.admin, app_id: session.appId ?? null }, 200, {
      "cache-control": "no-store",
    });
  });

  r.post("/console/logout", async (c) => {
    const session = sessions.verify(getCookie(c, COOKIE));
    if (session) await sessions.logout(session); // a copy of the cookie no longer works
    deleteCookie(c, COOKIE, { path: "/console" });
    return c.json({}, 200, { "cache-control": "no-store" });
  });

  // Everything else needs a session.
  r.use("/console/*", async (c, next) => {
    const session = sessions.verify(getCookie(c, COOKIE));
    if (!session) return err(c, 401, "log in first");
    c.set("session", session);
    c.header("cache-control", "no-store");
    await next();
  });

  r.get("/console/api/session", (c) => {
    const session = c.get("session");
    const apps = opts.apps.all().filter((a) => mayOpen(session, a.id)).map((a) => ({
      id: a.id,
      key: a.key,
      name: a.name ?? null,
      secret: maskSecret(a.secret),
      webhooks: (a.webhooks ?? []).map((w) => ({ url: w.url, event_types: w.event_types })),
    }));
    return c.json({
      admin: session.admin,
      node: opts.nodeId,
      clustered: cluster !== undefined,
      expires: session.expires,
      apps,
    });
  });

  r.get("/console/api/node/stats", async (c) => {
    if (!c.get("session").admin) return err(c, 404, "not found");
    return c.json({ step_ms: 10_000, series: await stats.node() });
  });

  r.get("/console/api/cluster/stats", (c) => {
    if (!c.get("session").admin || !cluster) return err(c, 404, "not found");
    return c.json({ step_ms: 10_000, ...cluster.read() });
  });

  // An app's routes: only for a session that may open it (404 otherwise: no existence leak).
  r.use("/console/api/apps/:id/*", async (c, next) => {
    const app = opts.apps.byId(c.req.param("id"));
    if (!app || !mayOpen(c.get("session"), app.id)) return err(c, 404, "no such app");
    c.set("app", app);
    await next();
  });

  r.get(
    "/console/api/apps/:id/live",
    (c) => liveStream(c, c.get("app").key, c.get("session").expires),
  );
  r.get(
    "/console/api/apps/:id/stats",
    (c) => c.json({ step_ms: 10_000, series: stats.app(c.get("app").key) }),
  );
  r.get(
    "/console/api/apps/:id/channels",
    (c) => c.json({ channels: browse.channels(c.get("app")) }),
  );
  r.get(
    "/console/api/apps/:id/channels/:name",
    (c) => answer(c, () => browse.channel(c.get("app"), c.req.param("name"))),
  );
  r.get("/console/api/apps/:id/objects", (c) => {
    const at = c.req.query("at");
    if (!c.req.query("key")) {
      return c.json({ objects: browse.objectList(c.get("app"), c.req.query("type") ?? "") });
    }
    return answer(
      c,
      () =>
        browse.object(
          c.get("app"),
          c.req.query("type") ?? "",
          c.req.query("key") ?? "",
          at === undefined || at === "" ? undefined : Number(at),
        ),
    );
  });
  r.get("/console/api/apps/:id/limits", (c) => c.json({ limits: limitsOf(c.get("app")) }));
  r.get("/console/api/apps/:id/threads", (c) => c.json({ threads: browse.threads(c.get("app")) }));
  r.get(
    "/console/api/apps/:id/threads/:thread",
    (c) => answer(c, () => browse.thread(c.get("app"), c.req.param("thread"))),
  );
  r.get("/console/api/apps/:id/webhooks", (c) => {
    const app = c.get("app");
    const results = new Map(stats.webhooks(app.key).map((w) => [w.url, w]));
    const backlog = new Map(opts.outbox.backlog(app).map((b) => [b.url, b]));
    const givenUp = webhookGivenUpCounts("pusher", app.id);
    const urls = new Set([
      ...(app.webhooks ?? []).map((w) => w.url),
      ...backlog.keys(),
      ...results.keys(),
      ...givenUp.keys(),
    ]);
    const webhooks = [...urls].map((url) => ({
      url,
      configured: (app.webhooks ?? []).some((w) => w.url === url),
      pending: backlog.get(url)?.pending ?? 0,
      oldest_age_ms: backlog.get(url)?.oldestAgeMs ?? null,
      max_attempt: backlog.get(url)?.maxAttempt ?? 0,
      next_due_at: backlog.get(url)?.nextDueAt ?? null,
      given_up: givenUp.get(url) ?? 0,
      last: results.get(url) ?? null,
    }));
    return c.json({ webhooks });
  });
  r.post("/console/api/apps/:id/webhooks/retry", async (c) => {
    const body = await c.req.json().catch(() => ({})) as { url?: unknown };
    const url = typeof body.url === "string" ? body.url : undefined;
    return c.json({ moved: await opts.outbox.retryNow(c.get("app"), url) });
  });

  r.all("/console/*", (c) => err(c, 404, "not found"));

  return { routes: r as unknown as Hono, close: () => stats.close() };
}

/** Runs a browse view: its answer as JSON, or its refusal. */
function answer(c: Context, view: () => unknown): Response {
  try {
    return c.json(view() as Record<string, unknown>);
  } catch (e) {
    if (e instanceof BrowseError) return c.json({ error: e.message }, e.status);
    throw e;
  }
}

/** The `secret` field of a JSON or form login body. */
async function secretOf(c: Context): Promise<string | undefined> {
  try {
    const type = c.req.header("content-type") ?? "";
    const body = type.includes("json") ? await c.req.json() : await c.req.parseBody();
    const secret = (body as Record<string, unknown>)?.secret;
    return typeof secret === "string" && secret.length > 0 && secret.length <= 1024
      ? secret
      : undefined;
  } catch {
    return undefined;
  }
}
