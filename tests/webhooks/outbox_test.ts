// The shared webhook outbox and sender (lib/webhooks/), in process over real LMDB: per-app
// bounds drop the oldest, lanes keep a hanging receiver from holding up another, and rows of the
// previous key shape are resumed. The retry schedule's own tests are in schedule_test.ts.
import assert from "node:assert/strict";
import { type OutboxEntry, WebhookOutbox } from "../../lib/webhooks/outbox.ts";
import { OutboxSender } from "../../lib/webhooks/sender.ts";
import { tempStore } from "../helpers/temp_store.ts";

interface Item extends OutboxEntry {
  to: string;
}

const item = (appId: string, to: string, body = "{}"): Item => ({
  id: crypto.randomUUID(),
  appId,
  to,
  body,
  attempt: 0,
});

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("webhook outbox: an app over its count or byte bound loses its oldest deliveries, other apps keep theirs", async () => {
  const { env } = tempStore();
  try {
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.to,
      limits: { maxCount: 3, maxBytes: 100 },
    });
    await outbox.add([1, 2, 3, 4, 5].map((n) => item("a", "x", `{"n":${n}}`)));
    await outbox.add([item("b", "y")]);
    const kept = outbox.entries().filter((m) => m.appId === "a").map((m) =>
      JSON.parse(outbox.read(m.seq)!.body).n
    );
    assert.deepEqual(kept, [3, 4, 5], "the oldest two were dropped");
    assert.equal(outbox.entries().filter((m) => m.appId === "b").length, 1);
    await outbox.add([item("b", "y", "x".repeat(90))]); // b: 2 + 90 bytes, then one more over 100
    await outbox.add([item("b", "y", "z".repeat(20))]);
    assert.deepEqual(
      outbox.entries().filter((m) => m.appId === "b").map((m) => outbox.read(m.seq)!.body.length),
      [20],
    );
    assert.ok(outbox.stats().bytes <= 3 * 7 + 100);
    // What the drops removed is gone from storage too, once their commit ran.
    await until(() => [...env.db("test:outbox").getKeys({})].length === outbox.entries().length);
  } finally {
    await env.close();
  }
});

Deno.test("webhook sender: a hanging receiver holds only its own lane", async () => {
  const { env } = tempStore();
  const release: (() => void)[] = [];
  try {
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.to,
    });
    const delivered: string[] = [];
    let hangingCalls = 0;
    const sender = new OutboxSender(outbox, (d, signal) => {
      if (d.to === "hang") {
        hangingCalls++;
        return new Promise((resolve) => {
          release.push(() => resolve("retry"));
          signal.addEventListener("abort", () => resolve("retry"));
        });
      }
      delivered.push(d.body);
      return Promise.resolve("delivered");
    }, { concurrency: 2, timeoutMs: 60_000 });
    await outbox.add(Array.from({ length: 10 }, () => item("a", "hang")));
    await until(() => hangingCalls === 2);
    await outbox.add(Array.from({ length: 5 }, (_, i) => item("b", "fine", `{"i":${i}}`)));
    await until(() => delivered.length === 5);
    assert.equal(hangingCalls, 2, "the hanging lane never had more than its 2 attempts in flight");
    sender.close();
  } finally {
    for (const r of release) r();
    await env.close();
  }
});

Deno.test("webhook outbox: rows of the previous key shape [dueAt, id] are resumed", async () => {
  const { env } = tempStore();
  try {
    const db = env.db<Item>("test:outbox");
    await env.transaction(() => db.put([Date.now() - 1000, "old-1"], item("a", "x", `{"old":1}`)));
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.to,
    });
    const got: string[] = [];
    const sender = new OutboxSender(outbox, (d) => {
      got.push(d.body);
      return Promise.resolve("delivered");
    });
    await until(() => got.length === 1);
    assert.equal(got[0], `{"old":1}`);
    await until(() => [...db.getKeys({})].length === 0);
    sender.close();
  } finally {
    await env.close();
  }
});

Deno.test("webhook sender: reschedule() takes due times moved in storage (the console's retry now)", async () => {
  const { env } = tempStore();
  try {
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.to,
    });
    let calls = 0;
    const sender = new OutboxSender(
      outbox,
      () => Promise.resolve(++calls === 1 ? "retry" : "delivered"),
      {
        retryDelaysMs: [60_000],
      },
    );
    await outbox.add([item("a", "r")]);
    await until(() =>
      outbox.entries().length === 1 && outbox.entries()[0].dueAt > Date.now() + 30_000
    );
    const db = env.db<Item>("test:outbox");
    const [{ key, value }] = [...db.getRange({})];
    await env.transaction(() => db.put(key, { ...value, dueAt: Date.now() }));
    sender.reschedule();
    await until(() => calls === 2 && outbox.entries().length === 0);
    sender.close();
  } finally {
    await env.close();
  }
});
