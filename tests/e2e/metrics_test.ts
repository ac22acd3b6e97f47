// GET /metrics: Prometheus text with the contract's metrics, counters that move with traffic,
// bounded labels (no channel names or ids), and --metrics-port serving it on its own listener.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { trigger } from "../pubsub/helpers.ts";

const sample = (text: string, name: string, labels = "") => {
  const prefix = `${name}${labels ? `{${labels}}` : ""} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? NaN : Number(line.slice(prefix.length));
};

Deno.test("metrics: the contract's metrics move with traffic; labels never carry names", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const secretName = "channel-name-that-must-not-appear";
    assert.equal((await sock.join(`pubsub:key1:${secretName}`, {})).status, "ok");
    await sock.join("pubsub:key1:private-x", {}); // refused: counted by reason kind
    for (let i = 0; i < 3; i++) await trigger(server, secretName, "e", { i });
    await sock.waitFor((f) => f[3] === "e" && f[4].serial === 3);
    const res = await fetch(`${server.baseUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/plain/);
    const text = await res.text();
    for (
      const name of [
        "switchboard_connections",
        "switchboard_messages_published_total",
        "switchboard_messages_delivered_total",
        "switchboard_log_appends_total",
        "switchboard_http_requests_total",
        "switchboard_http_request_duration_seconds",
        "switchboard_joins_total",
        "switchboard_lmdb_commit_seconds",
        "switchboard_lmdb_size_bytes",
        "switchboard_lmdb_transactions_total",
        "switchboard_process_cpu_seconds_total",
        "switchboard_nodejs_heap_size_used_bytes",
      ]
    ) assert.match(text, new RegExp(`^# TYPE ${name} `, "m"), name);
    // Reading the per-space heap gauges walks Bun's whole heap on every scrape.
    assert.doesNotMatch(text, /switchboard_nodejs_heap_space/);
    assert.equal(sample(text, "switchboard_connections", 'protocol="phoenix"'), 1);
    assert.ok(sample(text, "switchboard_log_appends_total", 'product="pubsub"') >= 3);
    assert.ok(sample(text, "switchboard_messages_delivered_total", 'product="pubsub"') >= 3);
    assert.equal(sample(text, "switchboard_joins_total", 'product="pubsub",outcome="ok"'), 1);
    assert.equal(
      sample(
        text,
        "switchboard_joins_total",
        'product="pubsub",outcome="auth required for private/presence channels"',
      ),
      1,
    );
    assert.ok(
      sample(
        text,
        "switchboard_http_requests_total",
        'method="POST",route="/api/apps/:app_id/trigger",status="2xx"',
      ) >= 3,
    );
    assert.ok(sample(text, "switchboard_lmdb_size_bytes") > 0);
    // Three triggers were committed: at least one LMDB write transaction ended.
    assert.ok(sample(text, "switchboard_lmdb_transactions_total") >= 1);
    assert.ok(!text.includes(secretName), "a channel name leaked into a label");
    assert.ok(!text.includes("secret1"));
  } finally {
    await sock.close();
    await server.stop();
  }
});

Deno.test("metrics: N triggers to k subscribers grow published by N and delivered by N·k", async () => {
  const server = await startServer();
  const socks = await Promise.all([1, 2, 3].map(() => RawSocket.connect(server.wsUrl("key1"))));
  const scrape = async () => await (await fetch(`${server.baseUrl}/metrics`)).text();
  try {
    for (const s of socks) assert.equal((await s.join("pubsub:key1:count", {})).status, "ok");
    const before = await scrape();
    const n = 5, k = socks.length;
    for (let i = 0; i < n; i++) await trigger(server, "count", "e", { i });
    for (const s of socks) await s.waitFor((f) => f[3] === "e" && f[4].serial === n);
    const after = await scrape();
    const delta = (name: string) =>
      sample(after, name, 'product="pubsub"') - (sample(before, name, 'product="pubsub"') || 0);
    assert.equal(delta("switchboard_messages_published_total"), n);
    assert.equal(delta("switchboard_messages_delivered_total"), n * k);
    assert.equal(delta("switchboard_log_appends_total"), n);
  } finally {
    for (const s of socks) await s.close();
    await server.stop();
  }
});

Deno.test("metrics: --metrics-port serves /metrics on its own listener only", async () => {
  const server = await startServer({ args: ["--metrics-port", "0"] });
  try {
    const line = /metrics:\s+http:\/\/[^:]+:(\d+)\/metrics/;
    for (let i = 0; i < 100 && !line.test(server.output()); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const port = Number(server.output().match(line)![1]);
    assert.notEqual(port, server.port);
    const own = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(own.status, 200);
    assert.match(await own.text(), /switchboard_connections/);
    const main = await fetch(`${server.baseUrl}/metrics`);
    assert.equal(main.status, 404);
    await main.body?.cancel();
  } finally {
    await server.stop();
  }
});

Deno.test("metrics: chat runs by state and tokens streamed", async () => {
  const server = await startServer();
  const human = await RawSocket.connect(server.wsUrl("key1"));
  const agent = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const topic = "chat:key1:metrics-run";
    const h = await human.join(topic, { client_id: "alice" });
    const a = await agent.join(topic, { agent_secret: "secret1", agent_id: "bot" });
    const sent = await human.push(topic, h.joinRef, "send", { content: "hi", runId: "r1" });
    assert.equal(sent.status, "ok");
    assert.equal((await agent.push(topic, a.joinRef, "run:start", { runId: "r1" })).status, "ok");
    for (const t of ["a", "b", "c"]) {
      assert.equal(
        (await agent.push(topic, a.joinRef, "token", { runId: "r1", text: t })).status,
        "ok",
      );
    }
    assert.equal((await agent.push(topic, a.joinRef, "run:end", { runId: "r1" })).status, "ok");
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    for (const state of ["pending", "active", "complete"]) {
      assert.equal(sample(text, "switchboard_chat_runs_total", `state="${state}"`), 1, state);
    }
    assert.equal(sample(text, "switchboard_chat_tokens_total"), 3);
  } finally {
    await human.close();
    await agent.close();
    await server.stop();
  }
});
