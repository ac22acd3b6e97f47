// Structured logs: by default one JSON object per line on stdout, with start/stop, config,
// refused requests and joins; never a secret or a token. `--log-level warn` drops info lines.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { token } from "../pubsub/helpers.ts";

Deno.test("logs: JSON lines with requests and joins refused, and no secrets or tokens", async () => {
  const server = await startServer({ args: ["--log-format", "json"] });
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  let tk = "";
  try {
    tk = await token(server, server.apps[0], "another-socket", ["channel:subscribe:private-x"]);
    assert.equal((await sock.join("pubsub:key1:private-x", { auth: tk })).status, "error");
    const bad = await fetch(`${server.baseUrl}/api/v1/objects/app-1/t/k`, {
      headers: { "x-app-key": "key1", "x-app-secret": "wrong-secret" },
    });
    assert.equal(bad.status, 401);
    await bad.body?.cancel();
    const nf = await fetch(`${server.baseUrl}/api/chat/threads/nope`, {
      headers: server.headers(),
    });
    assert.equal(nf.status, 404);
    await nf.body?.cancel();
  } finally {
    await sock.close();
    await server.stop();
  }
  const lines = server.output().trim().split("\n");
  const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>); // every line is JSON
  const find = (msg: string) => entries.filter((e) => e.msg === msg);
  assert.equal(find("starting").length, 1);
  assert.equal(find("starting")[0].data_dir, server.dataDir);
  assert.ok(entries.some((e) => String(e.msg).includes("listening on http://127.0.0.1:")));
  assert.deepEqual(
    find("request refused").map((e) => [e.method, e.route, e.status, e.app]).sort(),
    [["GET", "/api/chat/threads/:id", 404, "key1"], [
      "GET",
      "/api/v1/objects/:app_id/*",
      401,
      "key1",
    ]].sort(),
  );
  assert.ok(
    find("request refused").every((e) =>
      typeof e.ms === "number" && e.level === "info" && typeof e.time === "string"
    ),
  );
  assert.deepEqual(find("join refused").map((e) => e.reason), ["invalid token"]);
  assert.equal(find("SIGTERM: shutting down").length, 1);
  assert.equal(find("stopped").length, 1);
  const all = server.output();
  for (const secret of ["secret1", "secret2", "wrong-secret", tk]) {
    assert.ok(!all.includes(secret), `leaked ${secret.slice(0, 12)}`);
  }
});

Deno.test("logs: --log-level warn keeps warnings only", async () => {
  const server = await startServer({ args: ["--log-format", "json", "--log-level", "warn"] });
  try {
    const bad = await fetch(`${server.baseUrl}/api/v1/objects/app-1/t/k`);
    await bad.body?.cancel();
  } finally {
    await server.stop();
  }
  const entries = server.output().trim().split("\n").map((l) => JSON.parse(l));
  // Only the listening announcement (printed at any level) and warnings or worse remain.
  const others = entries.filter((e) => !String(e.msg).includes("listening on"));
  assert.equal(entries.length - others.length, 1);
  assert.ok(
    others.every((e) => e.level === "warn" || e.level === "error"),
    JSON.stringify(others).slice(0, 300),
  );
  assert.ok(!entries.some((e) => e.msg === "starting" || e.msg === "request refused"));
});
