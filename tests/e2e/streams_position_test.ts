// Issue 36: one stream position on every product and protocol. A bad position or epoch is
// refused with the same wording on Durable Objects, chat, Phoenix channels and Pusher; a
// position from another epoch gets `replay: "reset"` everywhere (Pusher's `pusher:subscribe`
// honours `epoch` as docs/pusher.md says), and objects and chat keep their old `reset: true`
// beside it for one release.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { RawPusher } from "../pusher/helpers.ts";
import { sdkFor } from "../pubsub/helpers.ts";

Deno.test("streams: one position, one refusal wording and one reset encoding on every product", async () => {
  const server = await startInProcess();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  const pusher = await RawPusher.connect(server, "key1");
  try {
    const sb = sdkFor(server);
    await sb.objects("doc", "p").set("a", 1);
    await sb.objects("doc", "p").set("b", 2);
    await makeThread(server, "pos");
    await api(
      server,
      "POST",
      "/api/chat/threads/pos/messages",
      doc("messages", { role: "user", content: "a" }, { id: "a" }),
    );
    await sb.trigger("news", "e", { n: 1 });
    await sb.trigger("news", "e", { n: 2 });

    const subscribe = async (data: Record<string, unknown>) => {
      const n = pusher.messages.length;
      pusher.send("pusher:subscribe", { channel: "news", ...data });
      const m = await pusher.waitFor((x) =>
        pusher.messages.indexOf(x) >= n &&
        (x.event === "pusher:subscription_error" ||
          x.event === "pusher_internal:subscription_succeeded")
      );
      return m;
    };

    // The same refusal on every surface.
    for (
      const [bad, reason] of [[{ after: "x" }, "invalid after_"], [
        { after: 1, epoch: 7 },
        "invalid epoch",
      ]] as const
    ) {
      const epoch = "epoch" in bad ? { epoch: bad.epoch } : {};
      const o = await sock.join("durable:key1:doc:p", {
        app_secret: "secret1",
        after_log_id: bad.after,
        ...epoch,
      });
      assert.deepEqual(o.response, {
        reason: reason === "invalid epoch" ? reason : "invalid after_log_id",
      });
      const c = await sock.join("chat:key1:pos", {
        client_id: "x",
        after_log_id: bad.after,
        ...epoch,
      });
      assert.deepEqual(c.response, {
        reason: reason === "invalid epoch" ? reason : "invalid after_log_id",
      });
      const p = await sock.join("pubsub:key1:news", { after_serial: bad.after, ...epoch });
      assert.deepEqual(p.response, {
        reason: reason === "invalid epoch" ? reason : "invalid after_serial",
      });
      const err = await subscribe({ after_serial: bad.after, ...epoch });
      assert.equal(err.event, "pusher:subscription_error");
      assert.deepEqual(JSON.parse(err.data as string), {
        type: "InvalidRequest",
        error: reason === "invalid epoch" ? reason : "invalid after_serial",
        status: 400,
      });
    }

    // A position from another epoch: nothing replayed, `replay: "reset"` on every product.
    const o = await sock.join("durable:key1:doc:p", {
      app_secret: "secret1",
      after_log_id: 1,
      epoch: "stale",
    });
    assert.deepEqual(o.response, {
      state: { a: 1, b: 2 },
      log_id: 2,
      epoch: "0",
      replay: "reset",
      first_log_id: 1,
      reset: true,
    });
    const c = await sock.join("chat:key1:pos", { client_id: "x", after_log_id: 1, epoch: "stale" });
    assert.equal(c.response.replay, "reset");
    assert.equal(c.response.reset, true, "chat keeps reset: true for one release");
    assert.equal(c.response.epoch, "0");
    const p = await sock.join("pubsub:key1:news", { after_serial: 1, epoch: "stale" });
    assert.deepEqual(p.response, { serial: 2, epoch: "0", replay: "reset", first_serial: 1 });
    assert.equal(
      sock.frames.filter((f) => f[3] === "change" || f[3] === "e").length,
      0,
      "nothing replayed",
    );

    const reset = await subscribe({ after_serial: 1, epoch: "stale" });
    assert.equal(reset.event, "pusher_internal:subscription_succeeded");
    assert.deepEqual([reset.serial, reset.epoch, reset.replay, reset.first_serial], [
      2,
      "0",
      "reset",
      1,
    ]);
    // The right epoch replays.
    pusher.send("pusher:unsubscribe", { channel: "news" });
    const ok = await subscribe({ after_serial: 1, epoch: "0" });
    assert.deepEqual([ok.serial, ok.epoch, ok.replay, ok.first_serial], [2, "0", "complete", 1]);
    const replayed = pusher.messages.filter((m) => m.event === "e");
    assert.deepEqual(replayed.map((m) => m.serial), [2]);
  } finally {
    pusher.close();
    await sock.close();
    await server.stop();
  }
});
