import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { App } from "../../lib/config/apps.ts";
import { Hub } from "../../lib/hub/hub.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { createChatServices } from "../../lib/chat/mod.ts";
import { ApiError } from "../../lib/http/errors.ts";
import type { ProductDeps } from "../../lib/product.ts";
import { Topic } from "../../lib/wire/topic.ts";

const app: App = {
  id: "app-1",
  key: "key1",
  secret: "secret1",
  enable_user_authentication: 0,
  enable_client_messages: true,
  max_client_events_per_sec: 100,
  max_backend_events_per_sec: 100,
};

async function withServices(
  fn: (s: ReturnType<typeof createChatServices>, hub: Hub) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), "chat-store-"));
  const env = new StoreEnv(join(dir, "db"));
  const hub = new Hub();
  try {
    const openLog = (name: string) => new OrderedLog(env, name);
    await fn(createChatServices({ env, hub, openLog } as unknown as ProductDeps), hub);
  } finally {
    await env.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

Deno.test("ChatStore.createMessage() appends message:created at the next log_id and lists in creation order", async () => {
  await withServices(async ({ store, threadLog }, hub) => {
    const frames: unknown[] = [];
    hub.subscribe(Topic.of("chat", "key1", "t1"), {
      socketId: "test.1",
      format: "json",
      sendEncoded: (d) => frames.push(JSON.parse(d as string)),
    });
    await store.threads.create(app, { id: "t1", title: "Hi" });
    for (const id of ["b", "a", "c"]) {
      await store.createMessage(app, "t1", { id, role: "user", content: id });
    }
    assert.equal(threadLog.head(app, "t1"), 4);
    const page = store.listMessages(app, "t1", { size: 2 });
    assert.deepEqual(page.items.map((m) => m.id), ["b", "a"]);
    assert.equal(page.hasNext, true);
    assert.equal(page.hasPrev, false);
    const next = store.listMessages(app, "t1", { size: 2, after: "a" });
    assert.deepEqual(next.items.map((m) => m.id), ["c"]);
    assert.equal(next.hasPrev, true);
    const prev = store.listMessages(app, "t1", { size: 1, before: "c" });
    assert.deepEqual(prev.items.map((m) => m.id), ["a"]);
    assert.equal(prev.hasPrev, true);
    assert.equal(prev.hasNext, true);
    await assert.rejects(
      store.createMessage(app, "t1", { id: "a", role: "user", content: "x" }),
      (e) => e instanceof ApiError && e.status === 409,
    );
    assert.equal(threadLog.head(app, "t1"), 4);
    const last = frames.at(-1) as [
      null,
      null,
      string,
      string,
      { log_id: number; message: { messageId: string } },
    ];
    assert.equal(last[3], "message:created");
    assert.equal(last[4].log_id, 4);
    assert.equal(last[4].message.messageId, "c");
  });
});

Deno.test("ChatStore thread delete purges messages and log", async () => {
  await withServices(async ({ store, threadLog }) => {
    await store.threads.create(app, { id: "t2" });
    await store.createMessage(app, "t2", { id: "m", role: "user", content: "x" });
    await store.threads.delete(app, "t2");
    assert.equal(threadLog.head(app, "t2"), 0);
    assert.equal(store.getMessage(app, "t2", "m"), undefined);
    await store.threads.create(app, { id: "t2" });
    assert.equal(store.listMessages(app, "t2", { size: 10 }).items.length, 0);
  });
});
