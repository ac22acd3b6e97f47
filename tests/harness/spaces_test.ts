// Spaces in-process (moved from tests/e2e/spaces_relay_test.ts, which needed no process):
// members in the reply, enter/leave events, pushes relayed as they are to the others, and the
// token a join needs when the app's user authentication is on.
import assert from "node:assert/strict";
import { withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const APP2 = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-2",
  appKey: "key2",
  appSecret: "secret2",
});

Deno.test("harness spaces: members in the reply, enter/leave events, pushes relayed as-is to the others", async () => {
  await withHarness(async (h) => {
    const topic = "spaces:key1:board:1";
    const a = await h.join(topic, { client_id: "ann", data: { color: "red" } });
    assert.deepEqual(a.reply.response, {
      members: [{ socket_id: a.socketId, client_id: "ann", data: { color: "red" } }],
    });
    const b = await h.join(topic, {});
    assert.equal(b.reply.response.members.length, 2);
    assert.deepEqual(await a.assertPush("member:enter"), {
      socket_id: b.socketId,
      client_id: null,
      data: null,
    });
    assert.equal(b.events("member:enter").length, 0);

    assert.deepEqual(await b.push("cursor", { x: 1, y: 2 }), { status: "ok", response: {} });
    assert.deepEqual(await a.assertPush("cursor"), { x: 1, y: 2 });
    assert.equal(b.events("cursor").length, 0, "the sender does not get its own push");

    const reserved = await b.push("member:enter", {});
    assert.match(
      String(reserved?.status === "error" && reserved.response.reason),
      /^Validation failed: /,
    );
    const big = await b.push("blob", { s: "x".repeat(11_000) });
    assert.deepEqual(big, {
      status: "error",
      response: { reason: "Validation failed: payload larger than 10240 bytes" },
    });

    b.leave("close");
    assert.deepEqual(await a.assertPush("member:leave"), {
      socket_id: b.socketId,
      client_id: null,
      data: null,
    });
  });
});

Deno.test("harness spaces: with app auth on a join needs a token with channel:subscribe:{space}", async () => {
  await withHarness(async (h) => {
    const join = (params: (socketId: string) => Promise<Record<string, unknown>>) =>
      h.join("spaces:key2:room", params, "key2");
    assert.deepEqual((await h.join("spaces:key2:room", {}, "key2")).reply.response, {
      reason: "forbidden: missing channel:subscribe:room",
    });
    assert.deepEqual((await h.join("spaces:key2:room", { auth: "bad" }, "key2")).reply.response, {
      reason: "invalid token",
    });
    const other = await join(async (s) => ({
      auth: await APP2.mintFastToken(s, ["channel:subscribe:other"]),
    }));
    assert.deepEqual(other.reply.response, { reason: "forbidden: missing channel:subscribe:room" });
    const ok = await join(async (s) => ({
      auth: await APP2.mintFastToken(s, ["channel:subscribe:room"], "u9"),
      client_id: "ignored",
    }));
    assert.deepEqual(ok.reply.response, {
      members: [{ socket_id: ok.socketId, client_id: "u9", data: null }],
    });
  });
});
