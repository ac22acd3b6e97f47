// End-to-end tests of the Durable Object HTTP API: every operation, every error, replay, purge
// and concurrency, against the real server.
import assert from "node:assert/strict";
import { startInProcess, type TestServer } from "../helpers/in_process.ts";

const server = await startInProcess();
const H = server.headers();
let counter = 0;

/** A fresh object base path per test. */
function objectPath(type = "doc", key = `k${++counter}-${crypto.randomUUID()}`): string {
  return `/api/v1/objects/app-1/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;
}

async function call(
  s: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = H,
): Promise<{ status: number; body: any }> {
  const res = await fetch(s.baseUrl + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

const req = (method: string, path: string, body?: unknown) => call(server, method, path, body);

Deno.test({
  name: "objects HTTP API",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    try {
      await t.step("GET on a never-written object answers {state:{}, log_id:0}", async () => {
        const p = objectPath();
        assert.deepEqual(await req("GET", p), { status: 200, body: { state: {}, log_id: 0 } });
        assert.deepEqual(await req("GET", `${p}/missing`), { status: 200, body: { value: null } });
        assert.deepEqual(await req("GET", `${p}/log`), { status: 200, body: { items: [] } });
      });

      await t.step("PUT, GET slot, PATCH, increment, append, DELETE slot", async () => {
        const p = objectPath();
        assert.deepEqual(await req("PUT", `${p}/title`, { value: "hi" }), {
          status: 200,
          body: { log_id: 1 },
        });
        assert.deepEqual(await req("GET", `${p}/title`), { status: 200, body: { value: "hi" } });
        assert.deepEqual(await req("PATCH", p, { a: 1, b: { x: [1] } }), {
          status: 200,
          body: { log_id: 2 },
        });
        assert.deepEqual(await req("POST", `${p}/increment`, { slot: "n" }), {
          status: 200,
          body: { log_id: 3, value: 1 },
        });
        assert.deepEqual(await req("POST", `${p}/increment`, { slot: "n", by: 2.5 }), {
          status: 200,
          body: { log_id: 4, value: 3.5 },
        });
        assert.deepEqual(await req("POST", `${p}/increment`, { slot: "n", by: -4 }), {
          status: 200,
          body: { log_id: 5, value: -0.5 },
        });
        assert.deepEqual(await req("POST", `${p}/append`, { slot: "list", value: "x" }), {
          status: 200,
          body: { log_id: 6 },
        });
        assert.deepEqual(await req("POST", `${p}/append`, { slot: "list", value: { y: 1 } }), {
          status: 200,
          body: { log_id: 7 },
        });
        assert.deepEqual(await req("DELETE", `${p}/a`), { status: 200, body: { log_id: 8 } });
        assert.deepEqual(await req("GET", p), {
          status: 200,
          body: {
            state: { title: "hi", b: { x: [1] }, n: -0.5, list: ["x", { y: 1 }] },
            log_id: 8,
          },
        });
        assert.deepEqual(await req("GET", `${p}/log?after=5`), {
          status: 200,
          body: {
            items: [
              { op: "set", key: "list", value: ["x"], log_id: 6 },
              { op: "set", key: "list", value: ["x", { y: 1 }], log_id: 7 },
              { op: "delete", key: "a", value: null, log_id: 8 },
            ],
          },
        });
      });

      await t.step("transaction: one log entry, ops in order, materialised in replay", async () => {
        const p = objectPath();
        await req("PUT", `${p}/n`, { value: 10 });
        const r = await req("POST", `${p}/transaction`, [
          { op: "set", key: "a", value: "A" },
          { op: "increment", key: "n", by: 5 },
          { op: "increment", key: "m" },
          { op: "append", key: "l", value: 1 },
          { op: "append", key: "l", value: 2 },
          { op: "delete", key: "a" },
        ]);
        assert.deepEqual(r, { status: 200, body: { log_id: 2 } });
        assert.deepEqual((await req("GET", p)).body, {
          state: { n: 15, m: 1, l: [1, 2] },
          log_id: 2,
        });
        assert.deepEqual((await req("GET", `${p}/log?after=1`)).body.items, [
          { op: "set", key: "a", value: "A", log_id: 2 },
          { op: "set", key: "n", value: 15, log_id: 2 },
          { op: "set", key: "m", value: 1, log_id: 2 },
          { op: "set", key: "l", value: [1], log_id: 2 },
          { op: "set", key: "l", value: [1, 2], log_id: 2 },
          { op: "delete", key: "a", value: null, log_id: 2 },
        ]);
        assert.equal((await req("GET", `${p}/log`)).body.items.length, 7);
        assert.equal((await req("GET", `${p}/log?after=2`)).body.items.length, 0);
      });

      await t.step("422 errors apply nothing", async () => {
        const p = objectPath();
        await req("PATCH", p, { s: "text", n: 1, l: [] });
        const bad: [string, string, unknown][] = [
          ["POST", "/increment", { slot: "s" }],
          ["POST", "/increment", { slot: "n", by: "2" }],
          ["POST", "/increment", { by: 1 }],
          ["POST", "/append", { slot: "n", value: 1 }],
          ["POST", "/append", { slot: "l" }],
          ["PUT", "/x", { nope: 1 }],
          ["PUT", "/x", [1]],
          ["PATCH", "", [1, 2]],
          ["PATCH", "", {}],
          ["POST", "/transaction", { op: "set", key: "a", value: 1 }],
          ["POST", "/transaction", []],
          ["POST", "/transaction", [{ op: "set", key: "a", value: 1 }, {
            op: "frobnicate",
            key: "a",
          }]],
          ["POST", "/transaction", [{ op: "set", key: "a", value: 1 }, { op: "set", value: 1 }]],
          ["POST", "/transaction", [{ op: "set", key: "a", value: 1 }, {
            op: "increment",
            key: "n",
            by: "x",
          }]],
          ["POST", "/transaction", [{ op: "set", key: "a", value: 1 }, {
            op: "increment",
            key: "s",
          }]],
          ["POST", "/transaction", [{ op: "set", key: "a", value: 1 }, {
            op: "append",
            key: "n",
            value: 1,
          }]],
          ["POST", "/transaction", [{ op: "set", key: "a" }]],
          ["POST", "/transaction", ["set"]],
        ];
        for (const [method, suffix, body] of bad) {
          const r = await req(method, p + suffix, body);
          assert.equal(r.status, 422, `${method} ${suffix} ${JSON.stringify(body)}`);
          assert.equal(typeof r.body.error, "string");
          assert.deepEqual(Object.keys(r.body), ["error"]);
        }
        assert.deepEqual((await req("GET", p)).body, {
          state: { s: "text", n: 1, l: [] },
          log_id: 1,
        });
        assert.equal((await req("GET", `${p}/log`)).body.items.length, 3);
      });

      await t.step(
        "400 for malformed JSON, 404 for unmatched routes, 401 for credentials",
        async () => {
          const p = objectPath();
          const r = await req("PUT", `${p}/x`, "{not json");
          assert.equal(r.status, 400);
          assert.equal(typeof r.body.error, "string");
          assert.equal((await req("POST", `${p}/transaction`, "")).status, 400);
          for (
            const [method, path] of [
              ["POST", `${p}/other`],
              ["GET", `${p}/a/b`],
              ["GET", "/api/v1/objects/app-1/doc"],
              ["GET", "/api/v1/objects/app-1"],
              ["POST", p],
            ]
          ) {
            const nf = await req(method, path);
            assert.equal(nf.status, 404, `${method} ${path}`);
            assert.deepEqual(nf.body, { error: "not found" });
          }
          assert.deepEqual((await req("GET", "/api/v1/objects")).status, 404);
          const unauthorized = { errors: [{ status: "401", title: "Unauthorized" }] };
          const wrong = { ...H, "x-app-secret": "nope" };
          assert.deepEqual(await call(server, "GET", p, undefined, wrong), {
            status: 401,
            body: unauthorized,
          });
          assert.deepEqual(
            await call(server, "PUT", `${p}/x`, { value: 1 }, {
              "content-type": "application/json",
            }),
            {
              status: 401,
              body: unauthorized,
            },
          );
          // app_id of another app, with app-1's credentials
          assert.equal((await req("GET", "/api/v1/objects/app-2/doc/k")).status, 401);
          // the App Key works as app_id too and addresses the same object
          await req("PUT", `${p}/x`, { value: 7 });
          const viaKey = p.replace("/app-1/", "/key1/");
          assert.deepEqual((await req("GET", `${viaKey}/x`)).body, { value: 7 });
        },
      );

      await t.step(
        "limits: slot name 256 bytes, value 256 KiB, 128 ops, 4 MiB per object",
        async () => {
          const p = objectPath();
          assert.equal((await req("PUT", `${p}/${"s".repeat(256)}`, { value: 1 })).status, 200);
          assert.equal((await req("PUT", `${p}/${"s".repeat(257)}`, { value: 1 })).status, 422);
          assert.equal(
            (await req("PUT", `${p}/big`, { value: "x".repeat(256 * 1024 - 2) })).status,
            200,
          );
          const tooBig = await req("PUT", `${p}/big2`, { value: "x".repeat(256 * 1024) });
          assert.equal(tooBig.status, 413);
          assert.equal(typeof tooBig.body.error, "string");
          const ops = Array.from(
            { length: 129 },
            (_, i) => ({ op: "set", key: `k${i}`, value: i }),
          );
          assert.equal((await req("POST", `${p}/transaction`, ops)).status, 413);
          assert.equal((await req("POST", `${p}/transaction`, ops.slice(1))).status, 200);
          const chunk = "y".repeat(200 * 1024);
          let status = 200;
          for (let i = 0; i < 25 && status === 200; i++) {
            status = (await req("PUT", `${p}/c${i}`, { value: chunk })).status;
          }
          assert.equal(status, 413);
          const longType = `/api/v1/objects/app-1/${"t".repeat(257)}/k`;
          assert.equal((await req("GET", longType)).status, 422);
        },
      );

      await t.step("purge: 204, back to never-written, log_id restarts at 1", async () => {
        const p = objectPath();
        await req("PUT", `${p}/a`, { value: 1 });
        await req("PUT", `${p}/b`, { value: 2 });
        const r = await fetch(server.baseUrl + p, { method: "DELETE", headers: H });
        assert.equal(r.status, 204);
        assert.equal(await r.text(), "");
        assert.deepEqual((await req("GET", p)).body, { state: {}, log_id: 0 });
        assert.deepEqual((await req("GET", `${p}/log`)).body, { items: [] });
        assert.deepEqual((await req("GET", `${p}/a`)).body, { value: null });
        assert.deepEqual((await req("PUT", `${p}/c`, { value: 3 })).body, { log_id: 1 });
        assert.equal(
          (await fetch(server.baseUrl + objectPath(), { method: "DELETE", headers: H })).status,
          204,
        );
      });

      await t.step("type and key are URL-decoded; a type holds no / (the key may)", async () => {
        const a = objectPath("a/b", "c");
        const b = objectPath("a", "b/c");
        assert.equal((await req("PUT", `${a}/v`, { value: "A" })).status, 422);
        await req("PUT", `${b}/v`, { value: "B" });
        assert.deepEqual((await req("GET", `${b}/v`)).body, { value: "B" });
        assert.deepEqual((await req("GET", objectPath("a", "b"))).body, { state: {}, log_id: 0 });
        const u = objectPath("tÿpe", "kéy with space");
        await req("PUT", `${u}/${encodeURIComponent("slot/é")}`, { value: 1 });
        assert.deepEqual((await req("GET", u)).body.state, { "slot/é": 1 });
      });

      await t.step(
        "200 parallel increments end at the exact sum with contiguous log_ids",
        async () => {
          const p = objectPath();
          const results = await Promise.all(
            Array.from({ length: 200 }, () => req("POST", `${p}/increment`, { slot: "n", by: 2 })),
          );
          assert.ok(results.every((r) => r.status === 200));
          const ids = results.map((r) => r.body.log_id).sort((x, y) => x - y);
          assert.deepEqual(ids, Array.from({ length: 200 }, (_, i) => i + 1));
          // each write saw the previous: its value is 2 * its position
          for (const r of results) assert.equal(r.body.value, 2 * r.body.log_id);
          assert.deepEqual((await req("GET", p)).body, { state: { n: 400 }, log_id: 200 });
          const items = (await req("GET", `${p}/log`)).body.items;
          assert.deepEqual(items.map((i: { log_id: number }) => i.log_id), ids);
        },
      );

      await t.step("log?after validates its parameter and honours limit", async () => {
        const p = objectPath();
        for (let i = 0; i < 5; i++) await req("PUT", `${p}/s`, { value: i });
        assert.equal((await req("GET", `${p}/log?after=-1`)).status, 400);
        assert.equal((await req("GET", `${p}/log?after=x`)).status, 400);
        const items = (await req("GET", `${p}/log?after=1&limit=2`)).body.items;
        assert.deepEqual(items.map((i: { log_id: number }) => i.log_id), [2, 3]);
      });
    } finally {
      await server.stop();
    }
  },
});
