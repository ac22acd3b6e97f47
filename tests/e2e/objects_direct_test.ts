// Object writes are answered by the product's direct route before the router (for speed);
// a percent-encoded path segment sends the same request through Hono's router instead. Both
// must answer every request alike: status, content type, body, and the write itself.
import assert from "node:assert/strict";
import { withInProcess } from "../helpers/in_process.ts";

const CASES: [method: string, tail: string, body: string][] = [
  ["PUT", "/v", '{"value":{"n":1,"s":"café"}}'],
  ["POST", "/increment", '{"slot":"n","by":2}'],
  ["POST", "/increment", '{"slot":"n","by":"x"}'],
  ["POST", "/increment", '{"slot":"v"}'],
  ["POST", "/append", '{"slot":"l","value":[1]}'],
  ["PATCH", "", '{"a":1,"b":null}'],
  ["PATCH", "", "{}"],
  ["POST", "/transaction", '[{"op":"set","key":"t","value":1},{"op":"delete","key":"a"}]'],
  ["POST", "/transaction", '[{"op":"nope","key":"t"}]'],
  ["PUT", "/v", "{bad json"],
  ["PUT", "/v", '{"value":{"__proto__":{"x":1}}}'],
  ["PUT", "/v", '{"nothing":1}'],
  ["POST", "/nope", '{"slot":"n"}'],
];

Deno.test("objects: the direct write route and the router answer every write alike", async () => {
  await withInProcess(async (server) => {
    const base = `${server.baseUrl}/api/v1/objects/app-1/t`;
    const headers = { ...server.headers(), "content-type": "application/json" };
    for (const [method, tail, body] of CASES) {
      // "k1" is written only by the direct route, "k2" (spelt %6B2) only through the router.
      const answers = [];
      for (const key of ["k1", "%6B2"]) {
        const res = await fetch(`${base}/${key}${tail}`, { method, headers, body });
        answers.push([res.status, res.headers.get("content-type"), await res.text()]);
      }
      assert.deepEqual(answers[0], answers[1], `${method} ${tail} ${body}`);
    }
    const state = async (
      key: string,
    ) => (await (await fetch(`${base}/${key}`, { headers })).json());
    const direct = await state("k1");
    assert.deepEqual(direct, await state("k2"));
    assert.deepEqual(direct, {
      state: { v: { n: 1, s: "café" }, n: 2, l: [[1]], b: null, t: 1 },
      log_id: 5,
    });
    // Bad credentials and app mismatches fall through to the router's 401.
    for (
      const h of [{ ...headers, "x-app-secret": "wrong" }, {
        ...headers,
        "x-app-key": "key2",
        "x-app-secret": "secret2",
      }]
    ) {
      const res = await fetch(`${base}/k1/increment`, {
        method: "POST",
        headers: h,
        body: '{"slot":"n"}',
      });
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), { errors: [{ status: "401", title: "Unauthorized" }] });
    }
  });
});
