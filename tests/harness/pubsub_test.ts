// Channels (pubsub) in-process: join, replay, partial replay past the retention window, reset on
// an epoch change, purge notice, and join param validation, through the real channel handler
// over a real OrderedLog (tests/harness/channel_harness.ts). No process is spawned.
import assert from "node:assert/strict";
import { withHarness } from "./channel_harness.ts";

const trigger = (
  h: { http: (...a: any[]) => Promise<{ status: number }> },
  channel: string,
  data: unknown,
) => h.http("POST", "/api/apps/app-1/trigger", { channel, event: "ev", data });

Deno.test("harness pubsub: a join without a position replies with the head, then gets live events", async () => {
  await withHarness(async (h) => {
    assert.equal((await trigger(h, "news", 1)).status, 200);
    const m = await h.join("pubsub:key1:news");
    assert.deepEqual(m.reply, { kind: "reply", status: "ok", response: { serial: 1, epoch: "0" } });
    assert.deepEqual(m.replayed(), []);
    await trigger(h, "news", 2);
    assert.deepEqual(await m.assertPush("ev", (p) => p.serial === 2), { serial: 2, data: 2 });
    assert.deepEqual(m.events().map((e) => e.kind), ["live"]);
  });
});

Deno.test("harness pubsub: replay oldest first before the reply; partial when trimmed; complete at the head", async () => {
  await withHarness(async (h) => {
    for (let i = 1; i <= 8; i++) assert.equal((await trigger(h, "r", { i })).status, 200);
    const m = await h.join("pubsub:key1:r", { after_serial: 5 });
    assert.deepEqual(m.reply.response, {
      serial: 8,
      epoch: "0",
      replay: "complete",
      first_serial: 4,
    });
    assert.deepEqual(m.received.map((r) => r.kind), ["push", "push", "push", "reply"]);
    assert.deepEqual(
      m.replayed().map((e) => e.payload),
      [6, 7, 8].map((i) => ({ serial: i, data: { i } })),
    );
    // Live events continue right after the replay.
    await trigger(h, "r", { i: 9 });
    await m.assertPush("ev", (p) => p.serial === 9);

    const p = await h.join("pubsub:key1:r", { after_serial: 1 });
    assert.deepEqual(p.reply.response, {
      serial: 9,
      epoch: "0",
      replay: "partial",
      first_serial: 5,
    });
    assert.deepEqual(p.replayed().map((e) => e.payload.serial), [5, 6, 7, 8, 9]);
    const none = await h.join("pubsub:key1:r", { after_serial: 9 });
    assert.deepEqual(none.reply.response, {
      serial: 9,
      epoch: "0",
      replay: "complete",
      first_serial: 5,
    });
    assert.deepEqual(none.replayed(), []);
    // A digit string is a position too.
    const str = await h.join("pubsub:key1:r", { after_serial: "8" });
    assert.deepEqual(str.replayed().map((e) => e.payload.serial), [9]);
  }, ["--history-max-count", "5"]);
});

Deno.test("harness pubsub: a long replay arrives whole and in order, then live", async () => {
  await withHarness(async (h) => {
    const events = Array.from(
      { length: 10 },
      (_, i) => ({ channel: "long", event: "ev", data: i }),
    );
    for (let i = 0; i < 60; i++) {
      assert.equal((await h.http("POST", "/api/apps/app-1/push", { events })).status, 200);
    }
    const m = await h.join("pubsub:key1:long", { after_serial: 0 });
    assert.equal(m.reply.response.replay, "complete");
    assert.deepEqual(
      m.replayed().map((e) => e.payload.serial),
      Array.from({ length: 600 }, (_, i) => i + 1),
    );
    await trigger(h, "long", "x");
    await m.assertPush("ev", (p) => p.serial === 601);
  });
});

Deno.test("harness pubsub: a position from another epoch or beyond the head gets a reset join", async () => {
  // Channels are never purged (history is trimmed), so their epoch stays "0"; a client that
  // kept a position from elsewhere gets the snapshot alone, flagged, and no stale replay.
  await withHarness(async (h) => {
    for (let i = 1; i <= 3; i++) await trigger(h, "p", i);
    const other = await h.join("pubsub:key1:p", { after_serial: 1, epoch: "1a2b3c4d" });
    assert.deepEqual(other.reply.response, {
      serial: 3,
      epoch: "0",
      replay: "reset",
      first_serial: 1,
    });
    assert.deepEqual(other.replayed(), []);
    const beyond = await h.join("pubsub:key1:p", { after_serial: 7, epoch: "0" });
    assert.equal(beyond.reply.response.replay, "reset");
    assert.deepEqual(beyond.replayed(), []);
    const same = await h.join("pubsub:key1:p", { after_serial: 1, epoch: "0" });
    assert.equal(same.reply.response.replay, "complete");
    assert.deepEqual(same.replayed().map((e) => e.payload.data), [2, 3]);
    await trigger(h, "p", 4);
    await other.assertPush("ev", (p) => p.serial === 4);
  });
});

Deno.test("harness pubsub: join params are validated before anything is sent", async () => {
  await withHarness(async (h) => {
    for (const bad of [2.5, -1, "x", "2.5", { n: 1 }]) {
      const r = await h.join("pubsub:key1:news", { after_serial: bad });
      assert.deepEqual(r.received, [{
        kind: "reply",
        status: "error",
        response: { reason: "invalid after_serial" },
      }], JSON.stringify(bad));
    }
    const e = await h.join("pubsub:key1:news", { after_serial: 0, epoch: 7 });
    assert.deepEqual(e.reply.response, { reason: "invalid epoch" });
    const t = await h.join("pubsub:key2:news");
    assert.deepEqual(t.reply.response, { reason: "app_key mismatch" });
    const priv = await h.join("pubsub:key1:private-x");
    assert.deepEqual(priv.reply.response, {
      reason: "auth required for private/presence channels",
    });
  });
});
