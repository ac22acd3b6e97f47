import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";

const UNAUTHORIZED = { errors: [{ status: "401", title: "Unauthorized" }] };

Deno.test("foundation: /healthz, the issuer and credential checks on a real server", async () => {
  const server = await startInProcess();
  const post = (path: string, headers: Record<string, string>, body: string) =>
    fetch(server.baseUrl + path, { method: "POST", headers, body });
  try {
    const health = await fetch(`${server.baseUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });

    const good = JSON.stringify({
      socket_id: "1.1",
      client_id: "alice",
      capabilities: ["chat:subscribe:t1"],
    });
    const ok = await post("/api/auth", server.headers(), good);
    assert.equal(ok.status, 200);
    const { auth } = await ok.json();
    const claims = JSON.parse(atob(auth.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    assert.equal(claims.aud, "service:v3");
    assert.equal(claims.exp - claims.iat, 300);
    assert.deepEqual(claims.capabilities, ["chat:subscribe:t1"]);

    for (
      const headers of <Record<string, string>[]> [
        { "content-type": "application/json" },
        { ...server.headers(), "x-app-secret": "wrong" },
        { ...server.headers(), "x-app-key": "nope" },
      ]
    ) {
      const res = await post("/api/auth", headers, good);
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), UNAUTHORIZED);
    }

    const bad = await post(
      "/api/auth",
      server.headers(),
      JSON.stringify({ socket_id: "1.1", client_id: "a", capabilities: ["chat:subscribe:a*b"] }),
    );
    assert.equal(bad.status, 422);
    assert.match((await bad.json()).errors[0].detail, /a\*b/);

    // An {app_id} route: the key or id of the authenticated app passes, another app's is 401.
    for (const [appId, status] of [["app-1", 200], ["key1", 200], ["app-2", 401]] as const) {
      const res = await fetch(`${server.baseUrl}/api/v1/objects/${appId}/counter/a`, {
        headers: server.headers(),
      });
      assert.equal(res.status, status, appId);
      await res.body?.cancel();
    }
  } finally {
    await server.stop();
  }
});
