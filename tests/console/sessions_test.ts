// The console's last holes, closed (docs/console.md "Security, in detail"): logout ends the
// session on the server (a copied cookie no longer works, on a restarted server too); an
// Origin must match the request's scheme as well as its host; every console answer carries
// X-Content-Type-Options: nosniff; the login limiter's table cannot be emptied by volume.
import assert from "node:assert/strict";
import { LoginLimiter } from "../../lib/console/session.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { ADMIN_SECRET, call, CONSOLE_APPS, login, startConsole } from "./helpers.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  ...opts,
  name: "console: logout ends the session on the server; a copied cookie no longer works",
  fn: async () => {
    const server = await startConsole();
    let restarted: Awaited<ReturnType<typeof startInProcess>> | undefined;
    try {
      const copy = await login(server, ADMIN_SECRET);
      const other = await login(server, CONSOLE_APPS[0].secret);
      assert.equal((await call(server, "/console/api/session", { cookie: copy })).status, 200);
      const out = await call(server, "/console/logout", { method: "POST", body: {}, cookie: copy });
      assert.equal(out.status, 200);
      assert.match(out.headers.get("set-cookie") ?? "", /sb_console=;/);
      // The copy (the same cookie value, sent again) is refused everywhere.
      for (const path of ["/console/api/session", "/console/api/apps/app-1/channels"]) {
        const res = await call(server, path, { cookie: copy });
        assert.equal(res.status, 401, path);
        assert.equal(res.body.error, "log in first");
      }
      // Another session is untouched.
      assert.equal((await call(server, "/console/api/session", { cookie: other })).status, 200);
      // The end is stored: after a restart on the same data dir the copy is still refused.
      await server.stop();
      restarted = await startConsole({ dataDir: server.dataDir });
      assert.equal((await call(restarted, "/console/api/session", { cookie: copy })).status, 401);
      assert.equal((await call(restarted, "/console/api/session", { cookie: other })).status, 200);
    } finally {
      await restarted?.stop();
      await server.stop().catch(() => {});
    }
  },
});

Deno.test({
  ...opts,
  name: "console: Origin is compared with its scheme (https://host on plain http is refused)",
  fn: async () => {
    const server = await startConsole();
    try {
      const host = new URL(server.baseUrl).host;
      const body = { secret: ADMIN_SECRET };
      const refused = await call(server, "/console/login", {
        method: "POST",
        body,
        origin: `https://${host}`,
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error, "cross-site request refused");
      assert.equal(refused.headers.get("set-cookie"), null);
      const ok = await call(server, "/console/login", {
        method: "POST",
        body,
        origin: `http://${host}`,
      });
      assert.equal(ok.status, 200);
      // Behind a TLS proxy (X-Forwarded-Proto: https) the page's origin is https://host.
      const proxied = await call(server, "/console/login", {
        method: "POST",
        body,
        origin: `https://${host}`,
        headers: { "x-forwarded-proto": "https" },
      });
      assert.equal(proxied.status, 200);
      const mismatch = await call(server, "/console/login", {
        method: "POST",
        body,
        origin: `http://${host}`,
        headers: { "x-forwarded-proto": "https" },
      });
      assert.equal(mismatch.status, 403);
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name: "console: every answer carries X-Content-Type-Options: nosniff",
  fn: async () => {
    const server = await startConsole();
    try {
      const cookie = await login(server, ADMIN_SECRET);
      const tries: [string, { method?: string; cookie?: string; body?: unknown }][] = [
        ["/console", {}],
        ["/console/", {}],
        ["/console/console.js", {}],
        ["/console/console.css", {}],
        ["/console/login", { method: "POST", body: { secret: "wrong" } }],
        ["/console/login", { method: "POST", body: { secret: ADMIN_SECRET } }],
        ["/console/api/session", {}],
        ["/console/api/session", { cookie }],
        ["/console/api/node/stats", { cookie }],
        ["/console/api/apps/app-1/channels", { cookie }],
        ["/console/api/apps/nope/channels", { cookie }],
        ["/console/api/apps/app-1/webhooks", { cookie }],
        ["/console/api/apps/app-1/webhooks/retry", { method: "POST", body: {}, cookie }],
        ["/console/nothing", { cookie }],
      ];
      for (const [path, o] of tries) {
        const res = await call(server, path, o);
        assert.equal(
          res.headers.get("x-content-type-options"),
          "nosniff",
          `${o.method ?? "GET"} ${path} (${res.status})`,
        );
      }
      // The live event stream too (read its headers, then let go).
      const ctl = new AbortController();
      const live = await fetch(`${server.baseUrl}/console/api/apps/app-1/live`, {
        headers: { cookie },
        signal: ctl.signal,
      });
      assert.equal(live.status, 200);
      assert.equal(live.headers.get("x-content-type-options"), "nosniff");
      ctl.abort();
      await live.body?.cancel().catch(() => {});
      const out = await call(server, "/console/logout", { method: "POST", body: {}, cookie });
      assert.equal(out.headers.get("x-content-type-options"), "nosniff");
    } finally {
      await server.stop();
    }
  },
});

Deno.test("console login limiter: 10,008 failures from other addresses never free a locked one", () => {
  const limiter = new LoginLimiter(); // 10 failures per 15 min, 10,000 addresses
  const now = 1_000_000;
  for (let i = 0; i < 10; i++) limiter.failed("203.0.113.7", now);
  assert.ok(limiter.retryAfter("203.0.113.7", now) > 0, "locked");
  for (let i = 0; i < 10_008; i++) limiter.failed(`10.0.${i >> 8}.${i & 255}`, now + 1);
  assert.ok(limiter.retryAfter("203.0.113.7", now + 3000) > 0, "still locked after the flood");
  assert.ok(limiter.size <= 10_000, "the table stays bounded");
  // Its window's end frees it, as for any address.
  assert.equal(limiter.retryAfter("203.0.113.7", now + 15 * 60_000), 0);
});

Deno.test("console login limiter: a table full of locked addresses refuses new addresses until a window ends", () => {
  const limiter = new LoginLimiter(2, 60_000, 3);
  const now = 5_000_000;
  for (const peer of ["a", "b", "c"]) {
    limiter.failed(peer, now);
    limiter.failed(peer, now);
    assert.ok(limiter.retryAfter(peer, now) > 0);
  }
  // Nothing can be evicted: a new address is refused (its guesses would go untracked).
  assert.equal(limiter.retryAfter("d", now + 10), 60);
  limiter.failed("d", now + 10);
  for (const peer of ["a", "b", "c"]) assert.ok(limiter.retryAfter(peer, now + 10) > 0);
  // Once the windows end, the new address may try again.
  assert.equal(limiter.retryAfter("d", now + 60_000), 0);
  // An address under the limit is what a full table gives up first, never a locked one.
  const l2 = new LoginLimiter(2, 60_000, 2);
  l2.failed("locked", now);
  l2.failed("locked", now);
  l2.failed("once", now);
  l2.failed("new", now);
  assert.ok(l2.retryAfter("locked", now) > 0);
  assert.equal(l2.size, 2);
});
