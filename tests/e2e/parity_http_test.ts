// Public probes answer any origin (CORS `*` on /healthz, /readyz, / and an unknown path's 404,
// never on authenticated routes), and /metrics has every series from the first scrape:
// both protocols' connection gauges at 0, Pusher sockets under protocol="pusher", no NaN.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { RawPusher } from "../pusher/helpers.ts";

const sample = (text: string, name: string, labels = "") => {
  const prefix = `${name}${labels ? `{${labels}}` : ""} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? NaN : Number(line.slice(prefix.length));
};

Deno.test("CORS *: health probes, the root and unknown paths; never authenticated routes", async () => {
  const server = await startInProcess();
  try {
    for (const path of ["/healthz", "/readyz", "/", "/no/such/path"]) {
      const res = await fetch(server.baseUrl + path, {
        headers: { origin: "https://elsewhere.example" },
      });
      await res.body?.cancel();
      assert.equal(res.headers.get("access-control-allow-origin"), "*", path);
    }
    const authed = [
      fetch(`${server.baseUrl}/api/apps/app-1/channels/news/history`, {
        headers: { ...server.headers(), origin: "https://x.example" },
      }),
      fetch(`${server.baseUrl}/api/apps/app-1/channels/news/history`, {
        headers: { origin: "https://x.example" },
      }),
      fetch(`${server.baseUrl}/apps/app-1/channels`, { headers: { origin: "https://x.example" } }),
      fetch(`${server.baseUrl}/metrics`),
    ];
    for (const res of await Promise.all(authed)) {
      await res.body?.cancel();
      assert.equal(res.headers.get("access-control-allow-origin"), null, res.url);
    }
  } finally {
    await server.stop();
  }
});

Deno.test("metrics: connection gauges of both protocols from the first scrape; Pusher sockets labelled pusher; no NaN", async () => {
  const server = await startInProcess();
  const scrape = async () => await (await fetch(`${server.baseUrl}/metrics`)).text();
  try {
    const first = await scrape();
    assert.equal(sample(first, "switchboard_connections", 'protocol="phoenix"'), 0);
    assert.equal(sample(first, "switchboard_connections", 'protocol="pusher"'), 0);
    const nan = first.split("\n").filter((l) => !l.startsWith("#") && /\sNaN$/.test(l));
    assert.deepEqual(nan, []);
    assert.ok(sample(first, "switchboard_nodejs_eventloop_lag_seconds") >= 0);
    const p = await RawPusher.connect(server, "key1");
    const s = await RawSocket.connect(server.wsUrl("key1"));
    let text = await scrape();
    assert.equal(sample(text, "switchboard_connections", 'protocol="pusher"'), 1);
    assert.equal(sample(text, "switchboard_connections", 'protocol="phoenix"'), 1);
    p.close();
    await s.close();
    for (let i = 0; i < 100; i++) {
      text = await scrape();
      if (sample(text, "switchboard_connections", 'protocol="pusher"') === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(sample(text, "switchboard_connections", 'protocol="pusher"'), 0);
    assert.equal(sample(text, "switchboard_connections", 'protocol="phoenix"'), 0);
  } finally {
    await server.stop();
  }
});
