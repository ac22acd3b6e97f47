// Capabilities at the join in-process (moved from tests/e2e/hardening_capabilities_test.ts,
// which needed no process for these two): object types hold no `/` or `:` (a/b/c is type a,
// key b/c), and a thread id holding `*` is a literal name for built-in grants and `*` grants.
// Prefix grants at issuance (`POST /api/auth`) stay in the e2e file.
import assert from "node:assert/strict";
import { withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const APP1 = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-1",
  appKey: "key1",
  appSecret: "secret1",
});
const APP2 = new Switchboard({
  baseUrl: "http://unused",
  appId: "app-2",
  appKey: "key2",
  appSecret: "secret2",
});

Deno.test("harness capabilities: object types with / or : are refused everywhere; a/b/c means type a, key b/c", async () => {
  await withHarness(async (h) => {
    for (const type of ["order%2Fsecret", "a%3Ab"]) {
      const r = await h.http("PUT", `/api/v1/objects/app-1/${type}/k/slot`, { value: 1 });
      assert.deepEqual(r, {
        status: 422,
        body: { error: 'object type must not contain "/" or ":"' },
      });
    }
    assert.equal(
      (await h.http("PUT", "/api/v1/objects/app-1/a/b%2Fc/slot", { value: 1 })).status,
      200,
    );
    assert.throws(() => APP1.objects("a/b", "c"), TypeError);

    const join = (topic: string, caps: string[]) =>
      h.join(topic, async (socketId) => ({ auth: await APP1.mintFastToken(socketId, caps) }));
    const exact = ["object:read:a/b/c"];
    const ok = await join("durable:key1:a:b/c", exact);
    assert.equal(ok.reply.status, "ok");
    assert.deepEqual(ok.reply.response.state, { slot: 1 });
    assert.deepEqual((await join("durable:key1:a/b:c", exact)).reply.response, {
      reason: "invalid topic format",
    });
    const prefix = ["object:read:order/*"];
    assert.equal((await join("durable:key1:order:1", prefix)).reply.status, "ok");
    assert.deepEqual((await join("durable:key1:order/secret:1", prefix)).reply.response, {
      reason: "invalid topic format",
    });
    assert.deepEqual((await join("durable:key1:orders:1", prefix)).reply.response, {
      reason: "forbidden: missing object:read:orders/1",
    });
  });
});

Deno.test("harness capabilities: a thread id holding * is a literal name for built-in grants and * grants", async () => {
  await withHarness(async (h) => {
    // App auth off: the anonymous default set names the thread exactly.
    const topic = "chat:key1:t*1";
    const j = await h.join(topic, { client_id: "alice" });
    assert.equal(j.reply.status, "ok", JSON.stringify(j.reply));
    const sent = await j.push("send", {
      content: "hi",
      messageId: "m1",
      runId: "r1",
      parentId: null,
    });
    assert.equal(sent?.status, "ok", JSON.stringify(sent));
    // Agents too.
    const agent = await h.join(topic, { agent_secret: "secret1", agent_id: "bot" });
    assert.equal(agent.reply.status, "ok", JSON.stringify(agent.reply));
    assert.equal((await agent.push("run:start", { runId: "r1" }))?.status, "ok");
    // App auth on: a lone * grant and a prefix grant match the literal name; an exact other does not.
    const t2 = "chat:key2:t*1";
    for (
      const [caps, ok] of [[["chat:subscribe:*"], true], [["chat:subscribe:t*"], true], [[
        "chat:subscribe:t1",
      ], false]] as const
    ) {
      const r = await h.join(
        t2,
        async (socketId) => ({ auth: await APP2.mintFastToken(socketId, [...caps], "bob") }),
        "key2",
      );
      assert.equal(
        r.reply.status,
        ok ? "ok" : "error",
        `${caps}: ${JSON.stringify(r.reply.response)}`,
      );
    }
  });
});
