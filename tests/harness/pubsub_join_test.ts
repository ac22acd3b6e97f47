// Channel join authorization in-process (moved from tests/e2e/pubsub_join_test.ts, which needed
// no process): each channel kind and app setting accepts or refuses with the spec's reason.
import assert from "node:assert/strict";
import { type Harness, withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const OPEN = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-1",
  appKey: "key1",
  appSecret: "secret1",
});
const AUTH = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-2",
  appKey: "key2",
  appSecret: "secret2",
});

/** Joins with a token minted by `sdk` for the joining socket. */
const withToken = (
  h: Harness,
  topic: string,
  sdk: Switchboard,
  caps: string[],
  extra: Record<string, unknown> = {},
  clientId?: string,
) =>
  h.join(
    topic,
    async (socketId) => ({ auth: await sdk.mintFastToken(socketId, caps, clientId), ...extra }),
    topic.split(":")[1],
  );

const reason = async (p: Promise<{ reply: { response: any } }>) => (await p).reply.response;

Deno.test("harness pubsub join: each channel kind and app setting accepts or refuses with the spec's reason", async (t) => {
  await withHarness(async (h) => {
    await t.step(
      "public channel, auth off: joins without a token, reply carries serial",
      async () => {
        const r = await h.join("pubsub:key1:news", {});
        assert.equal(r.reply.status, "ok");
        assert.deepEqual(r.reply.response, { serial: 0, epoch: "0" });
      },
    );
    await t.step("name with ':' is one channel", async () => {
      await h.http("POST", "/api/apps/app-1/trigger", { channel: "a:b:c", event: "ev", data: 1 });
      assert.deepEqual(await reason(h.join("pubsub:key1:a:b:c", {})), { serial: 1, epoch: "0" });
    });
    await t.step(
      "invalid names are invalid topic format; a long one is over the limit",
      async () => {
        for (const name of ["bad name", "a/b", "ü"]) {
          assert.deepEqual(await reason(h.join(`pubsub:key1:${name}`, {})), {
            reason: "invalid topic format",
          }, name);
        }
        // The app's max_channel_name_length (Pusher's 164 by default) names the limit.
        assert.deepEqual(await reason(h.join(`pubsub:key1:${"x".repeat(165)}`, {})), {
          reason: "limit reached: channel name longer than 164 characters",
        });
        assert.equal((await h.join(`pubsub:key1:${"x".repeat(164)}`, {})).reply.status, "ok");
      },
    );
    await t.step("private and presence need a token", async () => {
      for (const name of ["private-a", "presence-a"]) {
        assert.deepEqual(await reason(h.join(`pubsub:key1:${name}`, {})), {
          reason: "auth required for private/presence channels",
        });
      }
    });
    await t.step("a bad token is invalid token (garbage, other socket, other app)", async () => {
      assert.deepEqual(await reason(h.join("pubsub:key1:private-a", { auth: "nope" })), {
        reason: "invalid token",
      });
      const other = await OPEN.mintFastToken("1.2", ["channel:subscribe:private-a"]);
      assert.deepEqual(await reason(h.join("pubsub:key1:private-a", { auth: other })), {
        reason: "invalid token",
      });
      assert.deepEqual(
        await reason(withToken(h, "pubsub:key1:private-a", AUTH, ["channel:subscribe:private-a"])),
        { reason: "invalid token" },
      );
      // Even on a public channel a presented token must be valid.
      assert.deepEqual(await reason(h.join("pubsub:key1:news2", { auth: "nope" })), {
        reason: "invalid token",
      });
    });
    await t.step("a token without subscribe is forbidden", async () => {
      assert.deepEqual(
        await reason(withToken(h, "pubsub:key1:private-a", OPEN, ["channel:subscribe:private-b"])),
        { reason: "forbidden: missing channel:subscribe:private-a" },
      );
    });
    await t.step("private with a token (exact and wildcard) joins", async () => {
      assert.equal(
        (await withToken(h, "pubsub:key1:private-a", OPEN, ["channel:subscribe:private-a"])).reply
          .status,
        "ok",
      );
      assert.equal(
        (await withToken(h, "pubsub:key1:private-zz", OPEN, ["channel:subscribe:*"])).reply.status,
        "ok",
      );
    });
    await t.step("presence needs the presence capability and matching channel_data", async () => {
      assert.deepEqual(
        await reason(
          withToken(h, "pubsub:key1:presence-a", OPEN, ["channel:subscribe:presence-a"], {
            channel_data: '{"user_id":"u1"}',
          }, "u1"),
        ),
        { reason: "forbidden: missing channel:presence:presence-a" },
      );
      const caps = ["channel:subscribe:presence-a", "channel:presence:presence-a"];
      assert.deepEqual(await reason(withToken(h, "pubsub:key1:presence-a", OPEN, caps, {}, "u1")), {
        reason: "invalid channel_data",
      });
      assert.deepEqual(
        await reason(
          withToken(
            h,
            "pubsub:key1:presence-a",
            OPEN,
            caps,
            { channel_data: { user_id: "u2" } },
            "u1",
          ),
        ),
        { reason: "invalid token" },
      );
      const ok = await withToken(h, "pubsub:key1:presence-a", OPEN, caps, {
        channel_data: JSON.stringify({ user_id: "u1", user_info: { n: 1 } }),
      }, "u1");
      assert.equal(ok.reply.status, "ok");
      assert.deepEqual(ok.reply.response.presence, {
        members: [{ user_id: "u1", user_info: { n: 1 } }],
        count: 1,
      });
      // A second member hears the first one's presence in its reply, and the first hears it join.
      const second = await withToken(h, "pubsub:key1:presence-a", OPEN, caps, {
        channel_data: { user_id: "u2" },
      }, "u2");
      assert.equal(second.reply.response.presence.count, 2);
      assert.deepEqual(await ok.assertPush("presence:join"), { user_id: "u2" });
      second.leave();
      assert.deepEqual(await ok.assertPush("presence:leave"), { user_id: "u2" });
    });
    await t.step("ephemeral joins without serial or replay", async () => {
      assert.deepEqual(await reason(h.join("pubsub:key1:ephemeral-x", { after_serial: 0 })), {
        serial: null,
        replay: "none",
      });
    });
    await t.step("app_key mismatch and malformed after_serial", async () => {
      assert.deepEqual(await reason(h.join("pubsub:key2:news", {})), {
        reason: "app_key mismatch",
      });
      assert.deepEqual(await reason(h.join("pubsub:key1:news", { after_serial: -1 })), {
        reason: "invalid after_serial",
      });
    });
    await t.step("auth on: public and ephemeral need channel:subscribe", async () => {
      for (const name of ["news", "ephemeral-x"]) {
        assert.deepEqual(await reason(h.join(`pubsub:key2:${name}`, {}, "key2")), {
          reason: `forbidden: missing channel:subscribe:${name}`,
        });
        assert.equal(
          (await withToken(h, `pubsub:key2:${name}`, AUTH, [`channel:subscribe:${name}`])).reply
            .status,
          "ok",
        );
      }
      assert.deepEqual(await reason(h.join("pubsub:key2:private-a", {}, "key2")), {
        reason: "auth required for private/presence channels",
      });
    });
  });
});
