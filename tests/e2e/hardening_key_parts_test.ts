// Issue 12 items 3 and 7, the remaining key parts: app ids and keys, issued client ids and
// object slot reads are bounded like every other id (256 UTF-8 bytes), and object grants or
// SDK calls can never name a type holding `/` or `:`. (An apps file with an app id outside the
// grammar is refused at start-up: tests/tenancy/startup_test.ts, a process test.)
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { call, sdkFor } from "../pubsub/helpers.ts";

// 86 three-byte characters: 258 UTF-8 bytes, but only 86 UTF-16 units.
const LONG_JP = "日".repeat(86);
const OK_JP = "日".repeat(85); // 255 bytes

Deno.test("key parts: the issuer refuses a client_id over 256 bytes, naming it", async () => {
  const server = await startInProcess();
  try {
    const issue = (client_id: string, capabilities = ["chat:subscribe:t1"]) =>
      call(server, "POST", "/api/auth", { socket_id: "1.1", client_id, capabilities });
    const long = await issue(LONG_JP);
    assert.equal(long.status, 422);
    assert.deepEqual(long.body.errors[0].source, { pointer: "/client_id" });
    assert.equal(long.body.errors[0].detail, "client_id is longer than 256 bytes");
    assert.equal((await issue(OK_JP)).status, 200);
  } finally {
    await server.stop();
  }
});

Deno.test("key parts: an over-long slot name is 422 on reads as on writes", async () => {
  const server = await startInProcess();
  try {
    const path = `/api/v1/objects/app-1/café/k/${encodeURIComponent(LONG_JP)}`;
    assert.deepEqual(await call(server, "GET", path), {
      status: 422,
      body: { error: "slot is longer than 256 bytes" },
    });
    assert.deepEqual(await call(server, "PUT", path, { value: 1 }), {
      status: 422,
      body: { error: "slot is longer than 256 bytes" },
    });
    const ok = `/api/v1/objects/app-1/café/k/${encodeURIComponent(OK_JP)}`;
    assert.deepEqual(await call(server, "GET", ok), { status: 200, body: { value: null } });
    // Nothing was written by the refused PUT.
    assert.deepEqual((await call(server, "GET", "/api/v1/objects/app-1/café/k")).body, {
      state: {},
      log_id: 0,
    });
  } finally {
    await server.stop();
  }
});

Deno.test("key parts: object grants never name a type holding / or :", async () => {
  const server = await startInProcess();
  try {
    const sdk = sdkFor(server);
    // Cross-type grants built by the SDK: (a/b, c) would read as (a, b/c).
    await assert.rejects(
      () => sdk.authorize("1.1", { objects: [{ type: "a/b", key: "c" }] }),
      TypeError,
    );
    await assert.rejects(
      () => sdk.issueToken("1.1", "u", { objects: [{ type: "order/secret", key: "1" }] }),
      TypeError,
    );
    await assert.rejects(() => sdk.authenticateObject("1.1", "a:b", "c"), TypeError);
    assert.throws(() => sdk.objects("commande/secrète", "1"), TypeError);
    // The issuer: a grant whose type part holds `:` can match no object, so it is malformed.
    const issue = (capabilities: string[]) =>
      call(server, "POST", "/api/auth", { socket_id: "1.1", client_id: "u", capabilities });
    for (const cap of ["object:read:a:b/c", "object:read:a:*", "object:read:a:b/*"]) {
      assert.equal((await issue([cap])).status, 422, cap);
    }
    for (
      const cap of ["object:read:a/b:c", "object:read:a/b/c", "object:read:ord*", "object:read:*"]
    ) {
      assert.equal((await issue([cap])).status, 200, cap);
    }
    // The SDK's own grant for (a, b/c) still works: keys may hold `/` and `:`.
    const { auth } = await sdk.authenticateObject("1.1", "a", "b/c:d");
    assert.ok(auth.length > 0);
  } finally {
    await server.stop();
  }
});
