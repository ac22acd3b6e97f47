import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";

const ROUTES: [string, string][] = [
  ["get", "/api/chat/threads"],
  ["post", "/api/chat/threads"],
  ["get", "/api/chat/threads/{id}"],
  ["patch", "/api/chat/threads/{id}"],
  ["delete", "/api/chat/threads/{id}"],
  ["patch", "/api/chat/threads/{id}/assign-bot"],
  ["patch", "/api/chat/threads/{id}/handoff"],
  ["patch", "/api/chat/threads/{id}/resolve"],
  ["patch", "/api/chat/threads/{id}/archive"],
  ["get", "/api/chat/threads/{tid}/messages"],
  ["post", "/api/chat/threads/{tid}/messages"],
  ["get", "/api/chat/threads/{tid}/messages/{id}"],
  ["delete", "/api/chat/threads/{tid}/messages/{id}"],
  ["patch", "/api/chat/threads/{tid}/messages/{id}/edit"],
  ["patch", "/api/chat/threads/{tid}/messages/{id}/delete"],
  ["get", "/api/chat/threads/{tid}/messages/{id}/replies"],
  ["get", "/api/chat/threads/{tid}/participants"],
  ["post", "/api/chat/threads/{tid}/participants"],
  ["patch", "/api/chat/threads/{tid}/participants/{id}/mark-read"],
  ["patch", "/api/chat/threads/{tid}/participants/{id}/role"],
  ["delete", "/api/chat/threads/{tid}/participants/{id}"],
  ["get", "/api/chat/threads/{tid}/messages/{mid}/reactions"],
  ["post", "/api/chat/threads/{tid}/messages/{mid}/reactions"],
  ["delete", "/api/chat/threads/{tid}/messages/{mid}/reactions/{id}"],
  ["get", "/api/chat/bots"],
  ["post", "/api/chat/bots"],
  ["get", "/api/chat/bots/{id}"],
  ["patch", "/api/chat/bots/{id}"],
  ["delete", "/api/chat/bots/{id}"],
  ["patch", "/api/chat/bots/{id}/rotate-secret"],
  ["get", "/api/chat/open_api"],
];

Deno.test("GET /api/chat/open_api is an OpenAPI 3.1 document listing every chat route, served without credentials", async () => {
  const s = await startInProcess();
  try {
    const res = await fetch(`${s.baseUrl}/api/chat/open_api`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.ok(String(body.openapi).startsWith("3.1"));
    for (const [method, path] of ROUTES) {
      assert.ok(body.paths[path]?.[method], `missing ${method.toUpperCase()} ${path}`);
    }
    // request bodies are described for both accepted media types
    const post = body.paths["/api/chat/threads/{tid}/messages"].post;
    assert.ok(post.requestBody.content["application/vnd.api+json"]);
    assert.ok(post.requestBody.content["application/json"]);
    const list = body.paths["/api/chat/threads"].get;
    assert.ok(list.parameters.some((p: any) => p.name === "page[size]" && p.in === "query"));
    assert.ok(list.parameters.some((p: any) => p.name === "filter[status]"));
  } finally {
    await s.stop();
  }
});

Deno.test("a REST-created, edited and deleted message appears live on a socket joined to the thread topic", async () => {
  const s = await startInProcess();
  const sock = await RawSocket.connect(s.wsUrl("key1"));
  try {
    await makeThread(s, "live-t");
    const join = await sock.join("chat:key1:live-t", { client_id: "watcher" });
    assert.equal(join.status, "ok");
    const r = await api(
      s,
      "POST",
      "/api/chat/threads/live-t/messages",
      doc("messages", { role: "user", content: "over REST" }, { id: "rest-1" }),
    );
    assert.equal(r.status, 201);
    const created = await sock.waitFor((f) =>
      f[2] === "chat:key1:live-t" && f[3] === "message:created"
    );
    // The same wire shape as the join snapshot and load_older: messageId, no id.
    const payload = created[4] as { log_id: number; message: Record<string, unknown> };
    assert.equal(payload.message.messageId, "rest-1");
    assert.equal("id" in payload.message, false);
    assert.equal(payload.message.content, "over REST");
    assert.equal(payload.log_id, 2);
    await api(
      s,
      "PATCH",
      "/api/chat/threads/live-t/messages/rest-1/edit",
      doc("messages", { content: "changed" }),
    );
    const updated = await sock.waitFor((f) => f[3] === "message:updated");
    assert.equal((updated[4] as any).log_id, 3);
    assert.equal((updated[4] as any).message.content, "changed");
    await api(s, "PATCH", "/api/chat/threads/live-t/resolve");
    const status = await sock.waitFor((f) => f[3] === "thread:updated");
    assert.equal((status[4] as any).thread.status, "resolved");
    assert.equal((status[4] as any).previousStatus, "open");
    await api(s, "DELETE", "/api/chat/threads/live-t/messages/rest-1");
    const deleted = await sock.waitFor((f) => f[3] === "message:deleted");
    assert.deepEqual(deleted[4], { log_id: 5, messageId: "rest-1", hard: true });
  } finally {
    await sock.close();
    await s.stop();
  }
});
