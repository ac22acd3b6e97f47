// The chat thread channel in-process (moved from tests/e2e/streams_epoch_test.ts, which needed
// no process): replay before the reply then live, after_log_id validated as on every product,
// a hard-deleted thread's purge notice and new epoch, a reset join from the old epoch, and the
// join's authorization errors.
import assert from "node:assert/strict";
import { type Harness, type JoinParams, withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";
import { chatGrant } from "../../sdk/server/auth.ts";

const JSON_API = {
  "x-app-key": "key1",
  "x-app-secret": "secret1",
  "content-type": "application/vnd.api+json",
};
const api = (h: Harness, method: string, path: string, body?: unknown) =>
  h.http(method, path, body, JSON_API);
const doc = (
  type: string,
  attributes: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  data: { type, attributes, ...extra },
});

async function makeThread(h: Harness, id: string): Promise<void> {
  const r = await api(h, "POST", "/api/chat/threads", doc("threads", { title: "t" }, { id }));
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

async function post(h: Harness, thread: string, id: string, content: string): Promise<void> {
  const r = await api(
    h,
    "POST",
    `/api/chat/threads/${thread}/messages`,
    doc("messages", { role: "user", content }, { id }),
  );
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

Deno.test("harness chat: entries after after_log_id are pushed oldest first before the reply, then live", async () => {
  await withHarness(async (h) => {
    await makeThread(h, "t1");
    for (const id of ["a", "b", "c"]) await post(h, "t1", id, id);
    const m = await h.join("chat:key1:t1", { client_id: "r", after_log_id: 2 });
    assert.equal(m.reply.status, "ok");
    assert.equal(m.reply.response.log_id, 4);
    assert.equal(m.reply.response.epoch, "0");
    assert.equal(m.reply.response.reset, undefined);
    assert.deepEqual(m.replayed().map((e) => [e.event, e.payload.log_id]), [
      ["message:created", 3],
      ["message:created", 4],
    ]);
    assert.deepEqual(m.reply.response.messages.map((x: { content: string }) => x.content), [
      "a",
      "b",
      "c",
    ]);
    await post(h, "t1", "d", "d");
    const live = await m.assertPush("message:created", (p) => p.log_id === 5);
    assert.equal(live.message.content, "d");
    // No position: no replay, live only.
    const fresh = await h.join("chat:key1:t1", { client_id: "s" });
    assert.deepEqual(fresh.replayed(), []);
    assert.equal(fresh.reply.response.log_id, 5);
  });
});

Deno.test("harness streams: after_log_id is validated the same on every product", async () => {
  await withHarness(async (h) => {
    await makeThread(h, "valid");
    await post(h, "valid", "a", "a");
    await post(h, "valid", "b", "b");
    // A digit string is a position: "2" replays log_id 3 only.
    const ok = await h.join("chat:key1:valid", { client_id: "x", after_log_id: "2" });
    assert.equal(ok.reply.status, "ok");
    assert.deepEqual(ok.replayed().map((e) => e.payload.log_id), [3]);
    for (const bad of [2.5, -1, "x", "2.5", { n: 1 }]) {
      const r = await h.join("chat:key1:valid", { client_id: "x", after_log_id: bad });
      assert.deepEqual(r.received, [{
        kind: "reply",
        status: "error",
        response: { reason: "invalid after_log_id" },
      }], JSON.stringify(bad));
      const o = await h.join("durable:key1:doc:k", { app_secret: "secret1", after_log_id: bad });
      assert.deepEqual(o.reply.response, { reason: "invalid after_log_id" });
    }
    for (const bad of [2.5, "x"]) {
      const p = await h.join("pubsub:key1:news", { after_serial: bad });
      assert.deepEqual(p.reply.response, { reason: "invalid after_serial" });
    }
    const e = await h.join("pubsub:key1:news", { after_serial: 0, epoch: 7 });
    assert.deepEqual(e.reply.response, { reason: "invalid epoch" });
    const c = await h.join("chat:key1:valid", {
      client_id: "x",
      after_log_id: 0,
      epoch: "x".repeat(65),
    });
    assert.deepEqual(c.reply.response, { reason: "invalid epoch" });
  });
});

Deno.test("harness streams: a hard-deleted thread re-created with the same id starts clean, in a new epoch", async () => {
  await withHarness(async (h) => {
    await makeThread(h, "again");
    const human = await h.join("chat:key1:again", { client_id: "alice" });
    const sent = await human.push("send", {
      content: "hi",
      messageId: "u1",
      runId: "r1",
      parentId: null,
    });
    assert.equal(sent?.status, "ok", JSON.stringify(sent));
    const viewer = await h.join("chat:key1:again", { client_id: "bob" });
    assert.equal(viewer.reply.response.epoch, "0");
    assert.deepEqual(viewer.reply.response.runs.map((r: { runId: string }) => r.runId), ["r1"]);
    const oldHead = viewer.reply.response.log_id as number;

    assert.equal((await api(h, "DELETE", "/api/chat/threads/again")).status, 204);
    const deleted = await viewer.assertPush("thread:deleted");
    const epoch = deleted.epoch as string;
    assert.match(epoch, /^[0-9a-f]{8}$/);
    assert.deepEqual(deleted, { threadId: "again", epoch });

    await makeThread(h, "again");
    // A new viewer sees no run of the old thread.
    const fresh = await h.join("chat:key1:again", { client_id: "carol" });
    assert.deepEqual(fresh.reply.response.runs, []);
    assert.deepEqual(fresh.reply.response.messages, []);
    assert.equal(fresh.reply.response.log_id, 1);
    assert.equal(fresh.reply.response.epoch, epoch);
    // The online viewer got the new thread's first entry live at log_id 1.
    await viewer.assertPush("thread:created", (p) => p.log_id === 1);
    // Rejoining with the old epoch and position: a flagged fresh snapshot, no stale replay.
    const re = await h.join("chat:key1:again", {
      client_id: "bob",
      after_log_id: oldHead,
      epoch: "0",
    });
    assert.equal(re.reply.response.reset, true);
    assert.equal(re.reply.response.epoch, epoch);
    assert.equal(re.reply.response.log_id, 1);
    assert.deepEqual(re.replayed(), []);
  });
});

Deno.test("harness chat: thread join errors: auth required, invalid token, forbidden subscribe, invalid secret", async () => {
  // Moved from tests/chat_live/errors_test.ts, which needed no process for it.
  await withHarness(async (h) => {
    const sb2 = new Switchboard({ baseUrl: "http://unused", appKey: "key2", appSecret: "secret2" });
    const join = (t: string, params: JoinParams | ((socketId: string) => Promise<JoinParams>)) =>
      h.join(`chat:key2:${t}`, params, "key2");
    assert.deepEqual((await join("a", { client_id: "x" })).reply.response, {
      reason: "auth required",
    });
    assert.deepEqual((await join("a", { auth: "garbage" })).reply.response, {
      reason: "invalid token",
    });
    const other = await sb2.mintFastToken("999.1", ["chat:subscribe:a"], "x"); // other socket
    assert.deepEqual((await join("a", { auth: other })).reply.response, {
      reason: "invalid token",
    });
    // The default client set for a thread (what authenticateChat issues through /api/auth).
    const grant = (thread: string) => chatGrant(thread);
    const wrongThread = await join(
      "a",
      async (s) => ({ auth: await sb2.mintFastToken(s, grant("b"), "x") }),
    );
    assert.deepEqual(wrongThread.reply.response, { reason: "forbidden: missing chat:subscribe:a" });
    const ok = await join(
      "a",
      async (s) => ({ auth: await sb2.mintFastToken(s, grant("a"), "x") }),
    );
    assert.equal(ok.reply.status, "ok");
    assert.equal(ok.reply.response.client_id, "x");
    assert.deepEqual((await join("c", { agent_secret: "nope", agent_id: "a" })).reply.response, {
      reason: "invalid secret",
    });
    assert.equal((await join("c", { agent_secret: "secret2", agent_id: "a" })).reply.status, "ok");
    // App auth disabled: no token needed, the client id comes from the join params.
    const anon = await h.join("chat:key1:open", { client_id: "zed" });
    assert.equal(anon.reply.status, "ok");
    assert.equal(anon.reply.response.client_id, "zed");
    assert.deepEqual(
      Object.keys(anon.reply.response).sort(),
      ["client_id", "epoch", "has_older", "log_id", "messages", "runs", "streams"],
    );
  });
});

Deno.test("harness chat: tokens beyond 256 KiB are refused with a reason; the run ends with the rest", async () => {
  // Moved from tests/e2e/hardening_stream_cap_test.ts (issue 12 item 9), which needed no process:
  // an agent's token stream becomes the final message's content, so it is capped like content.
  await withHarness(async (h) => {
    const topic = "chat:key1:flux-ü";
    const human = await h.join(topic, { client_id: "alice" });
    const sent = await human.push("send", { content: "hi", messageId: "m1", runId: "r1" });
    assert.equal(sent?.status, "ok", JSON.stringify(sent));
    const agent = await h.join(topic, { agent_secret: "secret1", agent_id: "bot" });
    assert.equal(agent.reply.status, "ok", JSON.stringify(agent.reply));
    assert.equal((await agent.push("run:start", { runId: "r1" }))?.status, "ok");
    // 40,000 three-byte characters: 120,000 bytes (40,000 UTF-16 units) per token.
    const chunk = "語".repeat(40_000);
    for (let i = 0; i < 2; i++) {
      const t = await agent.push("token", { runId: "r1", text: chunk });
      assert.equal(t?.status, "ok", JSON.stringify(t));
    }
    const over = await agent.push("token", { runId: "r1", text: chunk });
    assert.deepEqual(over, {
      status: "error",
      response: { reason: "invalid_request: stream is larger than 262144 bytes" },
    });
    // A small token still fits under the cap.
    assert.equal((await agent.push("token", { runId: "r1", text: "!" }))?.status, "ok");
    const end = await agent.push("run:end", { runId: "r1", reason: "complete" });
    assert.equal(end?.status, "ok", JSON.stringify(end));
    const list = await api(h, "GET", `/api/chat/threads/${encodeURIComponent("flux-ü")}/messages`);
    assert.equal(list.status, 200);
    const reply = (list.body.data as any[]).find((m) => m.attributes.role === "assistant");
    assert.equal(reply.attributes.run_id, "r1");
    assert.equal(reply.attributes.content, chunk + chunk + "!");
    assert.equal(reply.attributes.status, "complete");
    // The human saw the run's end live.
    await human.assertPush("run:end", (p) => p.runId === "r1");
  });
});
