// The error path in-process: each surface's shape of an `ApiError`, the normalisation of other
// thrown values, and `RouteSurfaces` answering by the routes the router matched, not the URL.
import assert from "node:assert/strict";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ApiError, toApiError } from "../../lib/http/errors.ts";
import { CHAT, NATIVE, OBJECTS, PUSHER, RouteSurfaces } from "../../lib/http/surfaces.ts";
import { StorageUnavailableError } from "../../lib/store/errors.ts";

async function parts(res: Response): Promise<[number, string | null, string]> {
  return [res.status, res.headers.get("content-type"), await res.text()];
}

Deno.test("surfaces: one ApiError, four shapes", async () => {
  const err = new ApiError(422, "bad slot", { source: { pointer: "/slot" } });
  const api =
    '{"errors":[{"status":"422","title":"Unprocessable Entity","detail":"bad slot","source":{"pointer":"/slot"}}]}';
  assert.deepEqual(await parts(NATIVE.answer(err)), [422, "application/json", api]);
  assert.deepEqual(await parts(CHAT.answer(err)), [422, "application/vnd.api+json", api]);
  assert.deepEqual(await parts(OBJECTS.answer(err)), [
    422,
    "application/json",
    '{"error":"bad slot"}',
  ]);
  assert.deepEqual(await parts(PUSHER.answer(err)), [422, "text/plain; charset=UTF-8", "bad slot"]);
  // No detail: the title stands in where a surface needs text; JSON:API omits detail.
  assert.deepEqual(await parts(OBJECTS.answer(new ApiError(404))), [
    404,
    "application/json",
    '{"error":"Not Found"}',
  ]);
  assert.deepEqual(await parts(NATIVE.answer(new ApiError(401))), [
    401,
    "application/json",
    '{"errors":[{"status":"401","title":"Unauthorized"}]}',
  ]);
  // Pusher words the body cap its own way, and leaves server failures in the native shape.
  const tooLarge = new ApiError(413, "request body too large", { code: "body_too_large" });
  assert.match(
    await PUSHER.answer(tooLarge).text(),
    /^Request body too large: the limit is \d+ bytes$/,
  );
  assert.deepEqual(await parts(PUSHER.answer(new ApiError(503, "down"))), [
    503,
    "application/json",
    '{"errors":[{"status":"503","title":"Service Unavailable","detail":"down"}]}',
  ]);
  // Several errors of one refusal: JSON:API lists them all.
  const all = [
    new ApiError(422, "a", { source: { pointer: "/a" } }),
    new ApiError(422, "b", { title: "Custom" }),
  ];
  assert.deepEqual(JSON.parse(await CHAT.answer(new ApiError(422, "a", { all })).text()).errors, [
    { status: "422", title: "Unprocessable Entity", detail: "a", source: { pointer: "/a" } },
    { status: "422", title: "Custom", detail: "b" },
  ]);
});

Deno.test("surfaces: anything thrown becomes an ApiError", () => {
  const e = new ApiError(409, "dup");
  assert.equal(toApiError(e, "/"), e);
  const storage = toApiError(new StorageUnavailableError("disk full"), "/");
  assert.equal(storage.status, 503);
  assert.equal(storage.detail, new StorageUnavailableError("disk full").reason);
  assert.deepEqual([
    toApiError(new HTTPException(400, { message: "nope" }), "/").status,
    toApiError(new HTTPException(400, { message: "nope" }), "/").detail,
  ], [400, "nope"]);
  const crash = toApiError(new TypeError("boom"), "/x");
  assert.deepEqual([crash.status, crash.title, crash.detail], [
    500,
    "Internal Server Error",
    undefined,
  ]);
});

Deno.test("surfaces: a request is answered in the surface of the routes it matched", async () => {
  const http = new Hono();
  const surfaces = new RouteSurfaces();
  // A check before any route (like the body cap), answered in the matched route's surface.
  http.use("*", async (c, next) => {
    if (c.req.header("x-refuse")) {
      return surfaces.of(c).answer(
        new ApiError(413, "request body too large", { code: "body_too_large" }),
      );
    }
    await next();
  });
  const objects = new Hono().get("/odd/place/:k", () => {
    throw new ApiError(404, "not found");
  });
  const pusher = new Hono().get("/apps/:id/x", () => {
    throw new ApiError(400, "Invalid channel name");
  });
  const chat = new Hono().get("/objects-lookalike/:id", () => {
    throw new Error("bug");
  });
  surfaces.mount(http, objects, OBJECTS);
  surfaces.mount(http, pusher, PUSHER);
  surfaces.mount(http, chat, CHAT);
  http.notFound(() => NATIVE.answer(new ApiError(404)));
  http.onError((err, c) => surfaces.answer(err, c));

  assert.deepEqual(await parts(await http.request("/odd/place/1")), [
    404,
    "application/json",
    '{"error":"not found"}',
  ]);
  assert.deepEqual(await parts(await http.request("/apps/1/x")), [
    400,
    "text/plain; charset=UTF-8",
    "Invalid channel name",
  ]);
  assert.deepEqual(
    await parts(await http.request("/objects-lookalike/1")),
    [
      500,
      "application/vnd.api+json",
      '{"errors":[{"status":"500","title":"Internal Server Error"}]}',
    ],
  );
  assert.deepEqual(
    await parts(await http.request("/odd/place/1", { headers: { "x-refuse": "1" } })),
    [413, "application/json", '{"error":"request body too large"}'],
  );
  assert.match(
    (await parts(await http.request("/apps/1/x", { headers: { "x-refuse": "1" } })))[2],
    /^Request body too large/,
  );
  // No product route matched: the native shape.
  assert.deepEqual(
    await parts(await http.request("/nowhere", { headers: { "x-refuse": "1" } })),
    [
      413,
      "application/json",
      '{"errors":[{"status":"413","title":"Payload Too Large","detail":"request body too large"}]}',
    ],
  );
  assert.deepEqual(await parts(await http.request("/nowhere")), [
    404,
    "application/json",
    '{"errors":[{"status":"404","title":"Not Found"}]}',
  ]);
});
