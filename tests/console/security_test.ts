// The console's access rules against a real server (docs/console.md "Who sees what"): off without
// --console-secret; 401 without a session; one app's secret sees that app alone; forged,
// tampered and expired cookies are refused; cross-site POSTs are refused; brute-force logins
// are cut off; no app secret is ever sent in full.
import assert from "node:assert/strict";
import { AppRegistry } from "../../lib/config/apps.ts";
import { Sessions } from "../../lib/console/session.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { ADMIN_SECRET, call, CONSOLE_APPS, login, startConsole } from "./helpers.ts";
import type { App } from "../../lib/config/apps.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** Every console route that needs a session (GET unless marked). */
const PROTECTED = [
  "/console/api/session",
  "/console/api/node/stats",
  "/console/api/apps/app-1/live",
  "/console/api/apps/app-1/stats",
  "/console/api/apps/app-1/channels",
  "/console/api/apps/app-1/channels/room",
  "/console/api/apps/app-1/objects?type=t&key=k",
  "/console/api/apps/app-1/threads",
  "/console/api/apps/app-1/threads/t1",
  "/console/api/apps/app-1/webhooks",
  "POST /console/api/apps/app-1/webhooks/retry",
  "/console/anything/else",
];

/** `[method, path]` of a PROTECTED entry. */
const route = (r: string) => (r.startsWith("POST ") ? ["POST", r.slice(5)] : ["GET", r]);

Deno.test({
  ...opts,
  name: "console: without --console-secret every /console path answers 404",
  fn: async () => {
    const server = await startInProcess({ apps: CONSOLE_APPS });
    try {
      for (
        const path of [
          "/console",
          "/console/",
          "/console/console.js",
          "/console/api/session",
          "/console/api/apps/app-1/live",
        ]
      ) {
        assert.equal((await call(server, path)).status, 404, path);
      }
      const res = await call(server, "/console/login", {
        method: "POST",
        body: { secret: CONSOLE_APPS[0].secret },
      });
      assert.equal(res.status, 404);
      assert.equal(res.headers.get("set-cookie"), null);
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console: the page and its assets are public; everything else answers 401 without a session",
  fn: async () => {
    const server = await startConsole();
    try {
      const page = await call(server, "/console/");
      assert.equal(page.status, 200);
      assert.match(page.text, /type="password"/);
      assert.match(page.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
      assert.equal((await call(server, "/console/console.js")).status, 200);
      assert.equal((await call(server, "/console/console.css")).status, 200);
      assert.equal((await call(server, "/console")).status, 302);
      for (const r of PROTECTED) {
        const [method, path] = route(r);
        const res = await call(server, path, { method, body: method === "POST" ? {} : undefined });
        assert.equal(res.status, 401, `${method} ${path}`);
        assert.equal(typeof res.body.error, "string");
      }
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name: "console: an app's secret opens that app alone; the admin secret opens every app",
  fn: async () => {
    const server = await startConsole();
    try {
      const one = await login(server, CONSOLE_APPS[0].secret);
      assert.match(one, /^sb_console=/);
      const session = await call(server, "/console/api/session", { cookie: one });
      assert.equal(session.status, 200);
      assert.equal(session.body.admin, false);
      assert.deepEqual((session.body.apps as { id: string }[]).map((a) => a.id), ["app-1"]);
      assert.equal(
        (await call(server, "/console/api/apps/app-1/channels", { cookie: one })).status,
        200,
      );
      // The other app's routes, the node's charts and unknown apps: refused alike (404).
      for (const r of PROTECTED.filter((p) => p.includes("app-1"))) {
        const [method, path] = route(r.replace("app-1", "app-2"));
        const res = await call(server, path, {
          method,
          cookie: one,
          body: method === "POST" ? {} : undefined,
        });
        assert.equal(res.status, 404, `${method} ${path}`);
      }
      assert.equal((await call(server, "/console/api/node/stats", { cookie: one })).status, 404);
      assert.equal(
        (await call(server, "/console/api/apps/nope/channels", { cookie: one })).status,
        404,
      );

      const admin = await login(server, ADMIN_SECRET);
      const all = await call(server, "/console/api/session", { cookie: admin });
      assert.equal(all.body.admin, true);
      assert.deepEqual((all.body.apps as { id: string }[]).map((a) => a.id).sort(), [
        "app-1",
        "app-2",
      ]);
      assert.equal(
        (await call(server, "/console/api/apps/app-2/channels", { cookie: admin })).status,
        200,
      );
      assert.equal((await call(server, "/console/api/node/stats", { cookie: admin })).status, 200);

      // No secret in full anywhere the console answers.
      for (
        const text of [
          session.text,
          all.text,
          (await call(server, "/console/")).text,
          (await call(server, "/console/console.js")).text,
        ]
      ) {
        for (const s of [ADMIN_SECRET, ...CONSOLE_APPS.map((a) => a.secret)]) {
          assert.ok(!text.includes(s), "a secret was shown");
        }
      }
      const masked = (all.body.apps as { secret: string }[]).map((a) => a.secret);
      assert.ok(masked.every((m) => m.includes("…")));

      // A wrong secret opens nothing and sets no cookie.
      const wrong = await call(server, "/console/login", {
        method: "POST",
        body: { secret: "not-a-secret" },
      });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.headers.get("set-cookie"), null);
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console: the session cookie is HttpOnly, SameSite=Strict; forged, tampered and expired cookies are refused",
  fn: async () => {
    const server = await startConsole();
    try {
      const res = await call(server, "/console/login", {
        method: "POST",
        body: { secret: CONSOLE_APPS[0].secret },
      });
      const set = res.headers.get("set-cookie") ?? "";
      assert.match(set, /HttpOnly/);
      assert.match(set, /SameSite=Strict/);
      assert.match(set, /Path=\/console/);
      const good = set.split(";")[0];
      const value = good.slice("sb_console=".length);
      const [payload, sig] = value.split(".");

      // Tampered: the app session's payload rewritten to admin, the signature kept.
      const claims = JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/")));
      const forgedPayload = btoa(JSON.stringify({ ...claims, a: 1, i: null })).replaceAll("+", "-")
        .replaceAll("/", "_").replace(/=+$/, "");
      // Signed by another console secret (a different deployment).
      const registry = new AppRegistry(CONSOLE_APPS as App[]);
      const otherKey = new Sessions("some-other-console-secret", registry).cookie({
        admin: true,
        expires: Date.now() + 3600_000,
      });
      // Correctly signed (same console secret) but expired.
      const expired = new Sessions(ADMIN_SECRET, registry).cookie({
        admin: true,
        expires: Date.now() - 1000,
      });
      // Correctly signed and unexpired, but for a secret that is not the app's current one.
      const stale = new Sessions(
        ADMIN_SECRET,
        new AppRegistry([{ ...CONSOLE_APPS[0], secret: "an-old-secret-of-app-1" } as App]),
      )
        .cookie({ admin: false, appId: "app-1", expires: Date.now() + 3600_000 });
      const forged = [
        `sb_console=${forgedPayload}.${sig}`,
        `sb_console=${payload}.${sig.slice(0, -2)}${sig.endsWith("AA") ? "BB" : "AA"}`,
        `sb_console=${payload}`,
        "sb_console=garbage",
        `sb_console=${otherKey}`,
        `sb_console=${expired}`,
        `sb_console=${stale}`,
      ];
      assert.equal((await call(server, "/console/api/session", { cookie: good })).status, 200);
      for (const cookie of forged) {
        assert.equal((await call(server, "/console/api/session", { cookie })).status, 401, cookie);
        assert.equal(
          (await call(server, "/console/api/apps/app-2/channels", { cookie })).status,
          401,
          cookie,
        );
      }
      // The same minting with the real secret and a future expiry is accepted: the refusals
      // above are about the forgery, not the test's cookie format.
      const minted = new Sessions(ADMIN_SECRET, registry).cookie({
        admin: true,
        expires: Date.now() + 3600_000,
      });
      assert.equal(
        (await call(server, "/console/api/session", { cookie: `sb_console=${minted}` })).status,
        200,
      );
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console: cross-site POSTs are refused (Origin of another site, Sec-Fetch-Site: cross-site)",
  fn: async () => {
    const server = await startConsole();
    try {
      const admin = await login(server, ADMIN_SECRET);
      const evil = "https://evil.example";
      const tries = [
        { path: "/console/login", body: { secret: ADMIN_SECRET } },
        { path: "/console/api/apps/app-1/webhooks/retry", body: {} },
        { path: "/console/logout", body: {} },
      ];
      for (const t of tries) {
        const res = await call(server, t.path, {
          method: "POST",
          body: t.body,
          cookie: admin,
          origin: evil,
        });
        assert.equal(res.status, 403, `${t.path} from ${evil}`);
        assert.equal(res.headers.get("set-cookie"), null);
        const nullOrigin = await call(server, t.path, {
          method: "POST",
          body: t.body,
          cookie: admin,
          origin: "null",
        });
        assert.equal(nullOrigin.status, 403, `${t.path} from origin null`);
        const fetchSite = await call(server, t.path, {
          method: "POST",
          body: t.body,
          cookie: admin,
          origin: null,
          headers: { "sec-fetch-site": "cross-site" },
        });
        assert.equal(fetchSite.status, 403, `${t.path} with Sec-Fetch-Site: cross-site`);
      }
      // The same requests from the console's own origin go through.
      assert.equal(
        (await call(server, "/console/api/apps/app-1/webhooks/retry", {
          method: "POST",
          body: {},
          cookie: admin,
        })).status,
        200,
      );
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console: brute-force logins are cut off per address (429 with Retry-After, even with the right secret)",
  fn: async () => {
    const server = await startConsole();
    try {
      const before = await login(server, ADMIN_SECRET);
      for (let i = 0; i < 10; i++) {
        const res = await call(server, "/console/login", {
          method: "POST",
          body: { secret: `guess-${i}` },
        });
        assert.equal(res.status, 401, `guess ${i}`);
      }
      for (const secret of ["guess-10", ADMIN_SECRET]) {
        const res = await call(server, "/console/login", { method: "POST", body: { secret } });
        assert.equal(res.status, 429);
        assert.ok(Number(res.headers.get("retry-after")) > 0);
        assert.equal(res.headers.get("set-cookie"), null);
      }
      // A session opened before the lock-out still works: the limit is on logins only.
      assert.equal((await call(server, "/console/api/session", { cookie: before })).status, 200);
    } finally {
      await server.stop();
    }
  },
});
