import assert from "node:assert/strict";
import { Hono } from "hono";
import { type App, AppRegistry } from "../../lib/config/apps.ts";
import { appCredentials, type AppEnv } from "../../lib/http/credentials.ts";
import { verifyToken } from "../../lib/auth/verify.ts";
import { authRoutes } from "../../routes/auth.ts";

const base = {
  enable_user_authentication: 0 as const,
  enable_client_messages: true,
  max_client_events_per_sec: 100,
  max_backend_events_per_sec: 10_000,
};
const app1: App = { id: "id-1", key: "key-1", secret: "secret-1", ...base };
const app2: App = { id: "id-2", key: "key-2", secret: "secret-2", ...base };
const registry = new AppRegistry([app1, app2]);
const server = new Hono().route("/", authRoutes(registry));
const CREDS = { "X-App-Key": app1.key, "X-App-Secret": app1.secret };
const UNAUTHORIZED = { errors: [{ status: "401", title: "Unauthorized" }] };

function post(body: string | object, headers: Record<string, string> = CREDS) {
  return server.request("/api/auth", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const GOOD = { socket_id: "s1", client_id: "u1", capabilities: ["chat:subscribe:t1"] };

Deno.test("`POST /api/auth` issues a JWT bound to the socket and client", async () => {
  const res = await post(GOOD);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["auth"]);
  const p = await verifyToken(app1, body.auth, "s1");
  assert.equal(p?.clientId, "u1");
  assert.ok(p?.can("chat:subscribe:t1"));
  assert.equal(await verifyToken(app2, body.auth, "s1"), null);
});

Deno.test("`POST /api/auth` answers 401 with the exact body for missing or wrong credentials", async () => {
  const cases: Record<string, string>[] = [
    {},
    { "X-App-Key": app1.key },
    { "X-App-Secret": app1.secret },
    { "X-App-Key": app1.key, "X-App-Secret": "wrong" },
    { "X-App-Key": app1.key, "X-App-Secret": app2.secret },
    { "X-App-Key": "nope", "X-App-Secret": app1.secret },
    { "X-App-Key": app1.key, "X-App-Secret": "" },
  ];
  for (const headers of cases) {
    const res = await post(GOOD, headers);
    assert.equal(res.status, 401, JSON.stringify(headers));
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(await res.json(), UNAUTHORIZED);
  }
});

Deno.test("`POST /api/auth` checks credentials before the body", async () => {
  const res = await post("{not json", {});
  assert.equal(res.status, 401);
});

Deno.test("`POST /api/auth` answers 400 for a body that is not JSON", async () => {
  for (const body of ["{not json", ""]) {
    const res = await post(body);
    assert.equal(res.status, 400);
    const json = await res.json();
    assert.equal(json.errors[0].status, "400");
    assert.equal(typeof json.errors[0].title, "string");
  }
});

Deno.test("`POST /api/auth` answers 422 naming the bad field or capability", async () => {
  const cases: [unknown, RegExp][] = [
    [[], /JSON object/],
    [null, /JSON object/],
    [{ client_id: "u1", capabilities: ["chat:subscribe:t1"] }, /socket_id is required/],
    [{ ...GOOD, socket_id: 7 }, /socket_id must be a non-empty string/],
    [{ ...GOOD, socket_id: "" }, /socket_id/],
    [{ socket_id: "s1", capabilities: ["chat:subscribe:t1"] }, /client_id is required/],
    [{ ...GOOD, client_id: { id: 1 } }, /client_id must be/],
    [{ socket_id: "s1", client_id: "u1" }, /capabilities is required/],
    [{ ...GOOD, capabilities: "chat:subscribe:t1" }, /array/],
    [{ ...GOOD, capabilities: [] }, /empty/],
    [
      { ...GOOD, capabilities: ["chat:subscribe:t1", "chat:subscribe:t1"] },
      /"chat:subscribe:t1" is duplicated/,
    ],
    [{ ...GOOD, capabilities: ["chat:subscribe:t1", "chat:fly:t1"] }, /"chat:fly:t1" is malformed/],
    [
      { ...GOOD, capabilities: ["object:read:order/*/x"] },
      /"object:read:order\/\*\/x" is malformed/,
    ],
    [{ ...GOOD, capabilities: ["channel:subscribe:a*b"] }, /"channel:subscribe:a\*b" is malformed/],
    [{ ...GOOD, capabilities: [5] }, /5 is not a string/],
  ];
  for (const [body, detail] of cases) {
    const res = await post(JSON.stringify(body));
    assert.equal(res.status, 422, JSON.stringify(body));
    const json = await res.json();
    assert.equal(json.errors.length, 1);
    assert.equal(json.errors[0].status, "422");
    assert.match(json.errors[0].detail, detail);
  }
});

Deno.test("`POST /api/auth` accepts wildcard and agent capabilities", async () => {
  const capabilities = ["object:read:order/*", "channel:subscribe:*", "chat:publish:token:t1"];
  const res = await post({ ...GOOD, capabilities });
  assert.equal(res.status, 200);
  const p = await verifyToken(app1, (await res.json()).auth, "s1");
  assert.deepEqual(p?.capabilities, capabilities);
});

Deno.test("`appCredentials()` requires a path :app_id to name the authenticated app", async () => {
  const api = new Hono<AppEnv>();
  api.use("/api/apps/:app_id/*", appCredentials(registry));
  api.post("/api/apps/:app_id/trigger", (c) => c.json({ app: c.get("app").id }));
  api.get("/inline/:app_id", appCredentials(registry), (c) => c.json({ app: c.get("app").id }));
  api.get("/plain", appCredentials(registry), (c) => c.json({ app: c.get("app").id }));
  const call = (method: string, path: string) => api.request(path, { method, headers: CREDS });
  for (const path of ["/api/apps/id-1/trigger", "/api/apps/key-1/trigger"]) {
    const res = await call("POST", path);
    assert.equal(res.status, 200, path);
    assert.deepEqual(await res.json(), { app: "id-1" });
  }
  for (
    const path of ["/api/apps/id-2/trigger", "/api/apps/key-2/trigger", "/api/apps/zzz/trigger"]
  ) {
    const res = await call("POST", path);
    assert.equal(res.status, 401, path);
    assert.deepEqual(await res.json(), UNAUTHORIZED);
  }
  assert.equal((await call("GET", "/inline/key-1")).status, 200);
  assert.equal((await call("GET", "/inline/id-2")).status, 401);
  assert.deepEqual(await (await call("GET", "/plain")).json(), { app: "id-1" });
});
