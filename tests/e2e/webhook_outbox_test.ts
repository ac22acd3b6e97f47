// Bot webhooks go through a durable outbox: a delivery that failed before a restart is retried
// after it, with the same delivery id and the next attempt number.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { receiver } from "../helpers/webhook_receiver.ts";

Deno.test("webhook outbox: a retry pending at shutdown is sent after the restart", async () => {
  const hook = receiver([500]);
  try {
    const first = await startInProcess();
    try {
      await api(
        first,
        "POST",
        "/api/chat/bots",
        doc("bots", { name: "Hooky", webhook_url: hook.url }, { id: "hooky" }),
      );
      await makeThread(first, "t");
      await api(
        first,
        "PATCH",
        "/api/chat/threads/t/assign-bot",
        doc("threads", { bot_id: "hooky" }),
      );
      await hook.waitFor(1); // answered 500; the retry is due 0.5 s later
      // Stop once the failure is recorded in the outbox (the retry is scheduled, not sent).
      for (let i = 0; i < 100; i++) {
        const m = await (await fetch(`${first.baseUrl}/metrics`)).text();
        if (/switchboard_webhook_deliveries_total\{kind="bot",result="retried"\} 1/.test(m)) break;
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await first.stop();
    }
    assert.equal(hook.got.length, 1, "the retry must not have been sent before the shutdown");
    const again = await startInProcess({ dataDir: first.dataDir });
    try {
      const [a, b] = await hook.waitFor(2);
      assert.equal(
        b.headers.get("x-switchboard-delivery"),
        a.headers.get("x-switchboard-delivery"),
      );
      assert.equal(a.headers.get("x-switchboard-attempt"), "1");
      assert.equal(b.headers.get("x-switchboard-attempt"), "2");
      assert.equal(b.body, a.body);
      // The success is counted once the receiver's answer is processed.
      const delivered = /switchboard_webhook_deliveries_total\{kind="bot",result="delivered"\} 1/;
      let metrics = "";
      for (let i = 0; i < 200 && !delivered.test(metrics); i++) {
        metrics = await (await fetch(`${again.baseUrl}/metrics`)).text();
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.match(metrics, delivered);
    } finally {
      await again.stop();
    }
  } finally {
    await hook.close();
  }
});
