// Pins the exact error responses of every HTTP surface (status, Content-Type, body bytes): the
// native API's JSON:API bodies and the objects' `{ error }`, the chat REST's JSON:API
// (application/vnd.api+json) and the Pusher REST API's plain text. Refusals raised by handlers,
// by credentials, by the body cap and the `__proto__` check before any route, by the direct
// object-write route and by the 404 fallback are all covered, so a change to the error path
// cannot change a byte unnoticed.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { APPS, startInProcess, type TestApp, type TestServer } from "../helpers/in_process.ts";

const JSON_TYPE = "application/json";
const JSON_API = "application/vnd.api+json";
const TEXT = "text/plain; charset=UTF-8";
const OFF = { id: "app-off", key: "keyoff", secret: "secretoff", enabled: false } as TestApp;

/** One exchange's status, Content-Type and exact body text. */
type Answer = [status: number, type: string | null, body: string];

async function answer(res: Response): Promise<Answer> {
  return [res.status, res.headers.get("content-type"), await res.text()];
}

function req(
  server: TestServer,
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string } = {},
) {
  return fetch(`${server.baseUrl}${path}`, { method, headers: init.headers, body: init.body }).then(
    answer,
  );
}

/** A Pusher REST request signed as the Pusher libraries sign it. */
function pusher(
  server: TestServer,
  method: string,
  path: string,
  body = "",
  secret = "secret1",
  key = "key1",
) {
  const params: Record<string, string> = {
    auth_key: key,
    auth_timestamp: String(Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
  };
  if (body) params.body_md5 = createHash("md5").update(body).digest("hex");
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&");
  const sig = createHmac("sha256", secret).update([method, path, query].join("\n")).digest("hex");
  return fetch(`${server.baseUrl}${path}?${query}&auth_signature=${sig}`, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body || undefined,
  }).then(answer);
}

const jsonApi = (status: number, title: string, detail?: string, source?: object) =>
  JSON.stringify({
    errors: [{
      status: String(status),
      title,
      ...(detail === undefined ? {} : { detail }),
      ...(source ? { source } : {}),
    }],
  });
const objErr = (error: string) => JSON.stringify({ error });
const big = " ".repeat(8 * 1024 * 1024 + 1);
const proto = '{"__proto__":{"x":1}}';

Deno.test("error shapes: every surface answers its refusals byte for byte as before", async (t) => {
  const server = await startInProcess({ apps: [...APPS, OFF] });
  const h = server.headers();
  const hJson = { ...h, "content-type": JSON_TYPE };
  const hApi = { ...h, "content-type": JSON_API };
  const bad = { "x-app-key": "key1", "x-app-secret": "wrong" };
  const off = { "x-app-key": "keyoff", "x-app-secret": "secretoff", "content-type": JSON_TYPE };
  try {
    await t.step("fallback 404 and the body cap / __proto__ check on native routes", async () => {
      assert.deepEqual(await req(server, "GET", "/nowhere"), [
        404,
        JSON_TYPE,
        jsonApi(404, "Not Found"),
      ]);
      assert.deepEqual(
        await req(server, "POST", "/api/apps/app-1/trigger", { headers: hJson, body: big }),
        [413, JSON_TYPE, jsonApi(413, "Payload Too Large", "request body too large")],
      );
      assert.deepEqual(
        await req(server, "POST", "/api/apps/app-1/trigger", { headers: hJson, body: proto }),
        [
          422,
          JSON_TYPE,
          jsonApi(422, "Unprocessable Entity", 'a key named "__proto__" is not supported'),
        ],
      );
    });

    await t.step(
      "native channels API: credentials and handler refusals (JSON:API, application/json)",
      async () => {
        assert.deepEqual(
          await req(server, "POST", "/api/apps/app-1/trigger", {
            headers: { ...bad, "content-type": JSON_TYPE },
            body: "{}",
          }),
          [401, JSON_TYPE, jsonApi(401, "Unauthorized")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/apps/app-off/trigger", { headers: off, body: "{}" }),
          [403, JSON_TYPE, jsonApi(403, "Forbidden", "app disabled")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/auth", {
            headers: { ...bad, "content-type": JSON_TYPE },
            body: "{}",
          }),
          [401, JSON_TYPE, jsonApi(401, "Unauthorized")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/apps/app-1/trigger", { headers: hJson, body: "[" }),
          [400, JSON_TYPE, jsonApi(400, "Bad Request", "body must be a JSON object")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/apps/app-1/push", { headers: hJson, body: "{}" }),
          [400, JSON_TYPE, jsonApi(400, "Bad Request", "body must be { events: [...] }")],
        );
        assert.deepEqual(
          await req(server, "GET", "/api/apps/app-1/channels/c/history?after=x", { headers: h }),
          [
            422,
            JSON_TYPE,
            jsonApi(422, "Unprocessable Entity", "after must be a non-negative integer", {
              parameter: "after",
            }),
          ],
        );
        assert.deepEqual(
          await req(server, "GET", "/api/apps/app-1/channels/c/users", { headers: h }),
          [
            422,
            JSON_TYPE,
            jsonApi(422, "Unprocessable Entity", "users are only listed for presence- channels"),
          ],
        );
      },
    );

    await t.step(
      "objects: { error } from handlers, the direct route and the body cap; JSON:API credentials",
      async () => {
        const base = "/api/v1/objects/app-1";
        assert.deepEqual(await req(server, "GET", `${base}/t/k`, { headers: bad }), [
          401,
          JSON_TYPE,
          jsonApi(401, "Unauthorized"),
        ]);
        assert.deepEqual(
          await req(server, "GET", "/api/v1/objects/app-off/t/k", { headers: off }),
          [403, JSON_TYPE, jsonApi(403, "Forbidden", "app disabled")],
        );
        assert.deepEqual(await req(server, "GET", `${base}/t/k/x/y/z`, { headers: h }), [
          404,
          JSON_TYPE,
          objErr("not found"),
        ]);
        assert.deepEqual(await req(server, "GET", "/api/v1/objects", { headers: h }), [
          404,
          JSON_TYPE,
          objErr("not found"),
        ]);
        assert.deepEqual(
          await req(server, "GET", `${base}/t/k/log?after=-1`, { headers: h }),
          [400, JSON_TYPE, objErr("after must be a non-negative integer")],
        );
        // Through the direct route (plain path, credentials, Content-Length).
        assert.deepEqual(await req(server, "PUT", `${base}/t/k/s`, { headers: hJson, body: "{" }), [
          400,
          JSON_TYPE,
          objErr("request body is not valid JSON"),
        ]);
        assert.deepEqual(
          await req(server, "PUT", `${base}/t/k/s`, { headers: hJson, body: "{}" }),
          [422, JSON_TYPE, objErr('body must be an object with a "value" field')],
        );
        assert.deepEqual(await req(server, "PATCH", `${base}/t/k`, { headers: hJson, body: big }), [
          413,
          JSON_TYPE,
          objErr("request body too large"),
        ]);
        assert.deepEqual(
          await req(server, "PUT", `${base}/t/k/s`, { headers: hJson, body: `{"value":${proto}}` }),
          [422, JSON_TYPE, objErr('a key named "__proto__" is not supported')],
        );
        // Through the router (a percent-encoded segment is left to it).
        assert.deepEqual(
          await req(server, "PUT", `${base}/t/k%20k/s`, { headers: hJson, body: "{" }),
          [400, JSON_TYPE, objErr("request body is not valid JSON")],
        );
        assert.deepEqual(
          await req(server, "PATCH", `${base}/t/k%20k`, { headers: hJson, body: big }),
          [413, JSON_TYPE, objErr("request body too large")],
        );
        assert.deepEqual(
          await req(server, "PUT", `${base}/t/k%20k/s`, {
            headers: hJson,
            body: `{"value":${proto}}`,
          }),
          [422, JSON_TYPE, objErr('a key named "__proto__" is not supported')],
        );
        assert.deepEqual(
          await req(server, "POST", `${base}/t/k%20k/increment`, {
            headers: hJson,
            body: '{"slot":"n","by":"x"}',
          }),
          [422, JSON_TYPE, objErr("by must be a finite number")],
        );
      },
    );

    await t.step(
      "chat REST: JSON:API with its media type from credentials, gates, validation and the store",
      async () => {
        assert.deepEqual(await req(server, "GET", "/api/chat/threads", { headers: bad }), [
          401,
          JSON_API,
          jsonApi(401, "Unauthorized"),
        ]);
        assert.deepEqual(
          await req(server, "GET", "/api/chat/threads", { headers: off }),
          // One credentials middleware for every surface: the chat's 403 title is "Forbidden" as the
          // native API's always was (it was "Error" before, the reason phrase missing from TITLES).
          [403, JSON_API, jsonApi(403, "Forbidden", "app disabled")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/chat/threads", {
            headers: { ...h, "content-type": "text/plain" },
            body: "{}",
          }),
          [
            415,
            JSON_API,
            jsonApi(
              415,
              "Unsupported Media Type",
              "Content-Type must be application/vnd.api+json or application/json.",
            ),
          ],
        );
        assert.deepEqual(await req(server, "GET", "/api/chat/nope", { headers: h }), [
          404,
          JSON_API,
          jsonApi(404, "Not Found", "No route GET /api/chat/nope."),
        ]);
        assert.deepEqual(
          await req(server, "GET", "/api/chat/threads/th_missing", { headers: h }),
          [404, JSON_API, jsonApi(404, "Not Found", "Thread th_missing does not exist.")],
        );
        assert.deepEqual(
          await req(server, "GET", "/api/chat/threads?page[after]=th_missing", { headers: h }),
          [
            400,
            JSON_API,
            jsonApi(400, "Invalid cursor", "No thread with id th_missing.", {
              parameter: "page[after]",
            }),
          ],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/chat/threads", { headers: hApi, body: big }),
          [413, JSON_API, jsonApi(413, "Payload Too Large", "request body too large")],
        );
        assert.deepEqual(
          await req(server, "POST", "/api/chat/threads", {
            headers: hApi,
            body: `{"data":{"type":"threads","attributes":${proto}}}`,
          }),
          [
            422,
            JSON_API,
            jsonApi(422, "Unprocessable Entity", 'a key named "__proto__" is not supported'),
          ],
        );
        const wrongType = await req(server, "POST", "/api/chat/threads", {
          headers: hApi,
          body: '{"data":{"type":"bots"}}',
        });
        assert.deepEqual(wrongType.slice(0, 2), [409, JSON_API]);
        assert.equal(JSON.parse(wrongType[2]).errors[0].title, "Conflict");
        const invalid = await req(server, "POST", "/api/chat/threads", {
          headers: hApi,
          body: '{"data":{"type":"threads","attributes":{"title":7,"metadata":3}}}',
        });
        assert.deepEqual(invalid.slice(0, 2), [422, JSON_API]);
        const errors = JSON.parse(invalid[2]).errors as {
          status: string;
          title: string;
          source: { pointer: string };
        }[];
        assert.ok(errors.length >= 2, invalid[2]);
        for (const e of errors) {
          assert.deepEqual([e.status, e.title, e.source.pointer.startsWith("/data/attributes/")], [
            "422",
            "Unprocessable Entity",
            true,
          ]);
        }
        const query = await req(server, "GET", "/api/chat/threads?page[size]=x", { headers: h });
        assert.deepEqual(query.slice(0, 2), [400, JSON_API]);
        assert.equal(JSON.parse(query[2]).errors[0].title, "Invalid Query Parameter");
        assert.deepEqual(JSON.parse(query[2]).errors[0].source, { parameter: "page[size]" });
      },
    );

    await t.step(
      "Pusher REST: plain text from the app check, the signature, handlers and the body cap",
      async () => {
        assert.deepEqual(await pusher(server, "GET", "/apps/nope/channels"), [
          404,
          TEXT,
          "Unknown app",
        ]);
        const unsigned = await pusher(server, "GET", "/apps/app-1/channels", "", "wrong");
        assert.deepEqual(unsigned.slice(0, 2), [401, TEXT]);
        assert.deepEqual(
          await pusher(server, "GET", "/apps/app-off/channels", "", "secretoff", "keyoff"),
          [403, TEXT, "App is disabled"],
        );
        assert.deepEqual(await pusher(server, "POST", "/apps/app-1/events", "{}"), [
          400,
          TEXT,
          "Missing channels: give channels (an array) or channel",
        ]);
        assert.deepEqual(await pusher(server, "POST", "/apps/app-1/events", "["), [
          400,
          TEXT,
          "Malformed JSON body",
        ]);
        assert.deepEqual(
          await pusher(server, "GET", "/apps/app-1/channels/c/users"),
          [400, TEXT, "Users are only listed for presence channels"],
        );
        assert.deepEqual(
          await req(server, "POST", "/apps/app-1/events", {
            headers: { "content-type": JSON_TYPE },
            body: big,
          }),
          [413, TEXT, "Request body too large: the limit is 8388608 bytes"],
        );
      },
    );
  } finally {
    await server.stop();
  }
});
