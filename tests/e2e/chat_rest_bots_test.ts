import assert from "node:assert/strict";
import { withInProcess } from "../helpers/in_process.ts";
import { api, doc, makeMessage, makeThread, statusOf } from "../chat_rest/helpers.ts";
import { verifyWebhook } from "../../lib/chat/webhooks/signature.ts";
import { receiver } from "../helpers/webhook_receiver.ts";

Deno.test("chat REST bots: CRUD, pagination, webhook_secret only in create and rotate-secret meta", async () => {
  await withInProcess(async (s) => {
    const created = await api(
      s,
      "POST",
      "/api/chat/bots",
      doc("bots", { name: "A", webhook_url: "http://127.0.0.1:9/x" }, { id: "bot-a" }),
    );
    assert.equal(created.status, 201);
    const secret = created.body.meta.webhook_secret;
    assert.match(secret, /^whsec_[0-9a-f]{64}$/);
    assert.equal(JSON.stringify(created.body.data).includes(secret), false);
    assert.deepEqual(created.body.data.attributes.events, [
      "message.created",
      "message.updated",
      "message.deleted",
      "thread.status_changed",
    ]);
    assert.equal(
      await statusOf(s, "POST", "/api/chat/bots", doc("bots", { name: "A" }, { id: "bot-a" })),
      409,
    );
    assert.equal(await statusOf(s, "POST", "/api/chat/bots", doc("bots", { name: "" })), 422);
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/bots",
        doc("bots", { name: "x", webhook_url: "ftp://x" }),
      ),
      422,
    );
    assert.equal(
      await statusOf(s, "POST", "/api/chat/bots", doc("bots", { name: "x", events: ["nope"] })),
      422,
    );
    await api(s, "POST", "/api/chat/bots", doc("bots", { name: "B" }, { id: "bot-b" }));
    await api(s, "POST", "/api/chat/bots", doc("bots", { name: "C" }, { id: "bot-c" }));

    for (
      const r of [
        await api(s, "GET", "/api/chat/bots/bot-a"),
        await api(s, "GET", "/api/chat/bots"),
        await api(s, "PATCH", "/api/chat/bots/bot-a", doc("bots", { name: "A2" })),
      ]
    ) {
      assert.equal(r.status, 200);
      assert.equal(JSON.stringify(r.body).includes(secret), false);
      assert.equal(JSON.stringify(r.body).includes("webhook_secret"), false);
    }
    assert.equal((await api(s, "GET", "/api/chat/bots/bot-a")).body.data.attributes.name, "A2");
    const p1 = await api(s, "GET", "/api/chat/bots?page[size]=2");
    assert.deepEqual(p1.body.data.map((b: any) => b.id), ["bot-a", "bot-b"]);
    assert.deepEqual((await api(s, "GET", p1.body.links.next)).body.data.map((b: any) => b.id), [
      "bot-c",
    ]);

    const rotated = await api(s, "PATCH", "/api/chat/bots/bot-a/rotate-secret");
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.meta.webhook_secret, secret);
    assert.match(rotated.body.meta.webhook_secret, /^whsec_/);
    assert.equal(
      JSON.stringify((await api(s, "GET", "/api/chat/bots/bot-a")).body).includes(
        rotated.body.meta.webhook_secret,
      ),
      false,
    );

    assert.equal(await statusOf(s, "GET", "/api/chat/bots/ghost"), 404);
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/bots/ghost", doc("bots", { name: "x" })),
      404,
    );
    assert.equal(await statusOf(s, "PATCH", "/api/chat/bots/ghost/rotate-secret"), 404);
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/bots/bot-a", doc("bots", { name: 3 })),
      422,
    );
    assert.equal(await statusOf(s, "DELETE", "/api/chat/bots/bot-c"), 204);
    assert.equal(await statusOf(s, "DELETE", "/api/chat/bots/bot-c"), 404);
    assert.equal(
      await statusOf(s, "GET", "/api/chat/bots", undefined, { "X-App-Key": "key2" }),
      401,
    );
  });
});

Deno.test("chat webhooks: signed delivery of new messages to the assigned bot, retried after a 500 with the same delivery id", async () => {
  const hook = receiver([500]);
  try {
    await withInProcess(async (s) => {
      const bot = await api(
        s,
        "POST",
        "/api/chat/bots",
        doc("bots", { name: "Hooky", webhook_url: hook.url }, { id: "hooky" }),
      );
      const secret = bot.body.meta.webhook_secret;
      await makeThread(s, "t");
      await api(s, "PATCH", "/api/chat/threads/t/assign-bot", doc("threads", { bot_id: "hooky" }));
      // first delivery: thread.status_changed (answered 500, then retried)
      const [first, retry] = await hook.waitFor(2);
      assert.equal(
        first.headers.get("x-switchboard-delivery"),
        retry.headers.get("x-switchboard-delivery"),
      );
      assert.equal(first.body, retry.body);
      assert.equal(first.headers.get("x-switchboard-event"), "thread.status_changed");
      const statusEvent = JSON.parse(first.body);
      assert.equal(statusEvent.type, "thread.status_changed");
      assert.equal(statusEvent.previous_status ?? statusEvent.data.previous_status, "open");
      assert.equal(statusEvent.data.thread.attributes.status, "bot");

      const created = await makeMessage(s, "t", "m1");
      assert.equal(created.id, "m1");
      const all = await hook.waitFor(3);
      const msg = all[2];
      assert.equal(msg.headers.get("x-switchboard-event"), "message.created");
      const sig = msg.headers.get("x-switchboard-signature")!;
      const ts = msg.headers.get("x-switchboard-timestamp")!;
      assert.match(sig, /^sha256=[0-9a-f]{64}$/);
      assert.equal(await verifyWebhook(secret, sig, ts, msg.body), true);
      assert.equal(await verifyWebhook(secret, sig, ts, msg.body + " "), false);
      assert.equal(await verifyWebhook("whsec_other", sig, ts, msg.body), false);
      // signature is HMAC-SHA256 over `${timestamp}.${body}`, checked independently here
      const key = await crypto.subtle.importKey(
        "raw",
        new TextEncoder().encode(secret),
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      );
      const mac = new Uint8Array(
        await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${ts}.${msg.body}`)),
      );
      assert.equal(sig, "sha256=" + [...mac].map((b) => b.toString(16).padStart(2, "0")).join(""));
      const payload = JSON.parse(msg.body);
      assert.equal(payload.type, "message.created");
      assert.equal(payload.thread_id, "t");
      assert.equal(payload.bot_id, "hooky");
      assert.equal(payload.id, msg.headers.get("x-switchboard-delivery"));
      assert.equal(payload.data.message.id, "m1");
      assert.equal(payload.data.message.attributes.content, "text m1");
      assert.notEqual(payload.id, JSON.parse(first.body).id);

      // the bot's own messages are not echoed back; edits are delivered
      await makeMessage(s, "t", "m2", { role: "assistant", bot_id: "hooky" });
      await api(
        s,
        "PATCH",
        "/api/chat/threads/t/messages/m1/edit",
        doc("messages", { content: "edited" }),
      );
      const after = await hook.waitFor(4);
      assert.equal(after[3].headers.get("x-switchboard-event"), "message.updated");
      assert.equal(JSON.parse(after[3].body).data.message.attributes.content, "edited");

      // after handoff the bot hears the status change, but no longer the messages
      await api(s, "PATCH", "/api/chat/threads/t/handoff");
      const h = await hook.waitFor(5);
      assert.equal(JSON.parse(h[4].body).data.thread.attributes.status, "human");
      await makeMessage(s, "t", "m3");
      await api(s, "PATCH", "/api/chat/threads/t/resolve");
      const last = await hook.waitFor(6);
      assert.equal(last.length, 6);
      assert.equal(JSON.parse(last[5].body).type, "thread.status_changed");
      assert.equal(JSON.parse(last[5].body).data.thread.attributes.status, "resolved");
    });
  } finally {
    await hook.close();
  }
});
