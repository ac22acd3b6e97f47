// The server SDK's webhook checks: verifyChannelWebhook (Pusher-style X-Pusher-Key and
// X-Pusher-Signature, as lib/pusher/webhooks.ts signs) and the chat bots' verifyWebhook, which
// is the very function the server signs with (sdk/shared/webhook_signature.ts).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Switchboard, verifyChannelWebhook, verifyWebhook } from "../../sdk/server/mod.ts";
import { signWebhook } from "../../lib/chat/webhooks/signature.ts";
import { hmacHex } from "../../lib/pusher/signature.ts";

const app = { key: "key1", secret: "secret1" };
const body = JSON.stringify({
  time_ms: 1700000000000,
  events: [{ name: "channel_occupied", channel: "news" }],
});

Deno.test("verifyChannelWebhook accepts the server's signature and refuses any change", async () => {
  const signature = hmacHex(app.secret, body);
  assert.equal(signature, createHmac("sha256", app.secret).update(body).digest("hex"));
  assert.equal(await verifyChannelWebhook(app, { key: "key1", signature }, body), true);
  assert.equal(
    await verifyChannelWebhook(app, { key: "key1", signature: signature.toUpperCase() }, body),
    true,
    "hex case does not matter",
  );
  assert.equal(
    await verifyChannelWebhook(app, { key: "key2", signature }, body),
    false,
    "another app's key",
  );
  assert.equal(
    await verifyChannelWebhook(app, { key: "key1", signature }, body + " "),
    false,
    "a changed body",
  );
  assert.equal(
    await verifyChannelWebhook({ ...app, secret: "other" }, { key: "key1", signature }, body),
    false,
    "another secret",
  );
  assert.equal(
    await verifyChannelWebhook(app, { key: "key1", signature: signature.slice(2) }, body),
    false,
    "a shorter signature",
  );
  assert.equal(
    await verifyChannelWebhook(app, { key: null, signature }, body),
    false,
    "no key header",
  );
  assert.equal(
    await verifyChannelWebhook(app, { key: "key1", signature: undefined }, body),
    false,
    "no signature header",
  );

  const sb = new Switchboard({
    baseUrl: "http://127.0.0.1:1",
    appKey: "key1",
    appSecret: "secret1",
  });
  assert.equal(
    await sb.verifyChannelWebhook({ key: "key1", signature }, body),
    true,
    "the method uses the app's key and secret",
  );
  assert.equal(await sb.verifyChannelWebhook({ key: "key1", signature }, "{}"), false);
});

Deno.test("verifyWebhook (chat bots) from the server SDK checks what the server signs", async () => {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = await signWebhook("whsec", timestamp, body);
  assert.equal(await verifyWebhook("whsec", signature, timestamp, body), true);
  assert.equal(await verifyWebhook("whsec", signature, timestamp, `${body}x`), false);
  const old = String(Number(timestamp) - 3600);
  assert.equal(
    await verifyWebhook("whsec", await signWebhook("whsec", old, body), old, body),
    false,
    "an hour-old delivery",
  );
  assert.equal(
    await verifyWebhook("whsec", await signWebhook("whsec", old, body), old, body, 7200),
    true,
    "within the given tolerance",
  );
});
