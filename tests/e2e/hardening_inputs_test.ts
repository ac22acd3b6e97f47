// Issue 12 items 3, 9 and 10: over-long ids and oversized inputs are refused with a reason that
// names the field, before anything is written; bodies are capped while read; rate limit 0 is
// unlimited; the playground's presence channels work.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { call, token } from "../pubsub/helpers.ts";

const LONG = "x".repeat(3000);

Deno.test("inputs: a 3,000-character messageId is refused by name and commits nothing", async () => {
  const server = await startInProcess();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const topic = "chat:key1:ids";
    const j = await sock.join(topic, { client_id: "alice" });
    const head = j.response.log_id as number;
    for (const field of ["messageId", "runId", "parentId"]) {
      const r = await sock.push(topic, j.joinRef, "send", { content: "hi", [field]: LONG });
      assert.deepEqual(r, {
        status: "error",
        response: { reason: `invalid_request: ${field} is longer than 256 bytes` },
      });
    }
    // Multi-byte: 100 four-byte characters are 400 bytes.
    const emoji = await sock.push(topic, j.joinRef, "send", {
      content: "hi",
      messageId: "😀".repeat(100),
    });
    assert.equal(emoji.response.reason, "invalid_request: messageId is longer than 256 bytes");
    // Nothing was appended: a fresh join sees the same head, and no entry was delivered.
    const other = await RawSocket.connect(server.wsUrl("key1"));
    try {
      const again = await other.join(topic, { client_id: "bob" });
      assert.equal(again.response.log_id, head);
    } finally {
      await other.close();
    }
    assert.equal(
      sock.frames.filter((f) => f[2] === topic && typeof f[4]?.log_id === "number").length,
      0,
    );
    // Over-long thread ids and client ids on join.
    assert.deepEqual((await sock.join(`chat:key1:${LONG}`, {})).response, {
      reason: "invalid topic format",
    });
    assert.deepEqual((await sock.join("chat:key1:t2", { client_id: LONG })).response, {
      reason: "invalid client_id is longer than 256 bytes",
    });
    // REST: body ids and path ids answer 422 naming the member, never 500.
    await makeThread(server, "rest-ids");
    const m = await api(
      server,
      "POST",
      "/api/chat/threads/rest-ids/messages",
      doc("messages", { role: "user", content: "a" }, { id: LONG }),
    );
    assert.equal(m.status, 422);
    assert.equal((m.body as any).errors[0].source.pointer, "/data/id");
    const p = await api(server, "GET", `/api/chat/threads/${LONG}/messages`);
    assert.equal(p.status, 422);
    const d = await api(server, "DELETE", `/api/chat/threads/${LONG}`);
    assert.equal(d.status, 422);
  } finally {
    await sock.close();
    await server.stop();
  }
});

Deno.test("inputs: content, presence user_info, space data and pending runs are capped with a reason", async () => {
  const server = await startInProcess();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const topic = "chat:key1:caps";
    const j = await sock.join(topic, { client_id: "alice" });
    const big = await sock.push(topic, j.joinRef, "send", { content: "x".repeat(300_000) });
    assert.deepEqual(big.response, {
      reason: "invalid_request: content is larger than 262144 bytes",
    });
    await makeThread(server, "caps-rest");
    const r = await api(
      server,
      "POST",
      "/api/chat/threads/caps-rest/messages",
      doc("messages", { role: "user", content: "x".repeat(300_000) }, { id: "big" }),
    );
    assert.equal(r.status, 422);
    // Pending runs: no agent starts them, so they queue up to the cap.
    let refused = "";
    for (let i = 0; i < 80 && !refused; i++) {
      const s = await sock.push(topic, j.joinRef, "send", { content: `${i}` });
      if (s.status !== "ok") refused = String(s.response.reason);
    }
    assert.equal(refused, "invalid_request: too many pending runs (at most 64 per thread)");

    const caps = ["channel:subscribe:presence-big", "channel:presence:presence-big"];
    const tk = await token(server, server.apps[0], sock.socketId, caps, "u1");
    const pj = await sock.join("pubsub:key1:presence-big", {
      auth: tk,
      channel_data: { user_id: "u1", user_info: { s: "x".repeat(3000) } },
    });
    assert.deepEqual(pj.response, {
      reason: "invalid channel_data: user_info larger than 2048 bytes",
    });
    const sj = await sock.join("spaces:key1:big", { data: { s: "x".repeat(3000) } });
    assert.deepEqual(sj.response, { reason: "Validation failed: data larger than 2048 bytes" });
  } finally {
    await sock.close();
    await server.stop();
  }
});

Deno.test("inputs: request bodies are capped while read (413 in each surface's shape)", async () => {
  const server = await startInProcess();
  try {
    // A streamed body with no content-length: refused once it passes the cap. The body is
    // larger than the cap plus what loopback's socket buffers can hold (here up to 32 MiB to
    // receive, 4 MiB to send), so sending it whole means the server read it all.
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    const TOTAL = 96;
    let sent = 0;
    const stream = () =>
      new ReadableStream<Uint8Array>({
        pull(ctl) {
          if (sent >= TOTAL) return ctl.close();
          sent++;
          ctl.enqueue(chunk);
        },
      });
    // Each request on a fresh connection: the server stops reading the refused body.
    const fresh = () => Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    const c1 = fresh();
    const init = {
      client: c1,
      method: "POST",
      headers: server.headers(),
      body: stream(),
      duplex: "half",
    };
    const trigger = await fetch(`${server.baseUrl}/api/apps/app-1/trigger`, init as RequestInit);
    assert.equal(trigger.status, 413);
    assert.equal(
      ((await trigger.json()) as { errors: { status: string }[] }).errors[0].status,
      "413",
    );
    assert.ok(sent < TOTAL, `the server read all ${sent} MiB before refusing`);
    c1.close();
    const obj = await fetch(`${server.baseUrl}/api/v1/objects/app-1/t/k`, {
      method: "PATCH",
      headers: server.headers(),
      body: " ".repeat(9 * 1024 * 1024),
    });
    assert.equal(obj.status, 413);
    assert.deepEqual(await obj.json(), { error: "request body too large" });
  } finally {
    await server.stop();
  }
});

Deno.test("inputs: a rate limit of 0 in the apps file means unlimited", async () => {
  const server = await startInProcess({
    apps: [{
      id: "app-0",
      key: "key0",
      secret: "secret0",
      max_backend_events_per_sec: 0,
      max_client_events_per_sec: 0,
    }],
  });
  try {
    const results = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) =>
          call(server, "POST", "/api/apps/app-0/trigger", { channel: "c", event: "e", data: i }),
      ),
    );
    assert.ok(results.every((r) => r.status === 200));
  } finally {
    await server.stop();
  }
});

Deno.test("inputs: the playground's presence channels join with the token its auth route mints", async () => {
  const server = await startInProcess({ apps: null });
  const key = server.devApp!.key;
  const sock = await RawSocket.connect(server.wsUrl(key));
  try {
    const res = await fetch(`${server.baseUrl}/playground/api/auth`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ socket_id: sock.socketId, channel_name: "presence-lobby" }),
    });
    const { auth, channel_data } = await res.json() as { auth: string; channel_data: string };
    const j = await sock.join(`pubsub:${key}:presence-lobby`, { auth, channel_data });
    assert.equal(j.status, "ok", JSON.stringify(j.response));
    assert.equal((j.response.presence as { count: number }).count, 1);
  } finally {
    await sock.close();
    await server.stop();
  }
});
