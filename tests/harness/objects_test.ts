// Durable Objects in-process (moved from tests/e2e/objects_channel_test.ts, which needed no
// process): join authorization and reasons, replay before the reply, live change / batch /
// purge payloads, reset after a purge (position beyond the head, old epoch), the read-only
// refusal, and exact delivery under a write storm while members leave and rejoin. The same
// storm over real sockets stays in tests/e2e/streams_contract_test.ts.
import assert from "node:assert/strict";
import { type Harness, type Member, withHarness } from "./channel_harness.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const sb = new Switchboard({ baseUrl: "http://unused", appKey: "key1", appSecret: "secret1" });

const path = (type: string, key: string) =>
  `/api/v1/objects/app-1/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;

async function http(h: Harness, method: string, p: string, body?: unknown): Promise<any> {
  const res = await h.http(method, p, body);
  assert.ok(res.status < 300, `${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Applies a change / batch / purge payload to a local copy of the state. */
function applyEvent(state: Record<string, unknown>, event: string, payload: any): void {
  const ops = event === "batch" ? payload.ops : event === "change" ? [payload] : [];
  if (event === "purge") { for (const k of Object.keys(state)) delete state[k]; }
  for (const op of ops) {
    if (op.op === "delete") delete state[op.key];
    else state[op.key] = op.value;
  }
}

const isLive = (event: string) => event === "change" || event === "batch" || event === "purge";

Deno.test("harness objects: join auth reasons, token, wildcard token, app_secret, read-only pushes", async () => {
  await withHarness(async (h) => {
    const topic = "durable:key1:doc:a:b";
    await http(h, "PUT", `${path("doc", "a:b")}/x`, { value: 1 });
    const reason = async (params: Record<string, unknown>) =>
      (await h.join(topic, params)).reply.response.reason;
    assert.equal(await reason({}), "auth required for durable object channels");
    assert.equal(await reason({ auth: "" }), "auth required for durable object channels");
    assert.equal(await reason({ app_secret: "wrong" }), "invalid app_secret");
    assert.equal(await reason({ auth: "garbage" }), "invalid token");
    // A token minted for another socket, or for another object.
    const foreign = await sb.authenticateObject("1.2", "doc", "a:b");
    assert.equal(await reason({ auth: foreign.auth }), "invalid token");

    // The token names the joining socket, so it is minted for the member's socket id.
    const joinWith = (mint: (socketId: string) => Promise<string>) =>
      h.join(topic, async (socketId) => ({ auth: await mint(socketId) }));
    const wrong = await joinWith(async (s) => (await sb.authenticateObject(s, "doc", "a:c")).auth);
    assert.equal(wrong.reply.response.reason, "forbidden: missing object:read:doc/a:b");
    const good = await joinWith(async (s) => (await sb.authenticateObject(s, "doc", "a:b")).auth);
    assert.deepEqual(good.reply, {
      kind: "reply",
      status: "ok",
      response: { state: { x: 1 }, log_id: 1, epoch: "0" },
    });
    const wild = await joinWith((s) => sb.mintFastToken(s, ["object:read:doc/*"]));
    assert.equal(wild.reply.status, "ok");
    const bySecret = await h.join(topic, { app_secret: "secret1" });
    assert.deepEqual(bySecret.reply.response, { state: { x: 1 }, log_id: 1, epoch: "0" });
    const badPos = await h.join("durable:key1:t:k", { app_secret: "secret1", after_log_id: "x" });
    assert.equal(badPos.reply.response.reason, "invalid after_log_id");
    const badTopic = await h.join("durable:key1:nokey", { app_secret: "secret1" });
    assert.equal(badTopic.reply.response.reason, "invalid topic format");

    assert.deepEqual(await good.push("set", { key: "x", value: 2 }), {
      status: "error",
      response: { reason: "writes must go through the server SDK" },
    });
  });
});

Deno.test("harness objects: replay before the reply, live change / batch / purge, reset after a purge", async () => {
  await withHarness(async (h) => {
    const p = path("doc", "live");
    const topic = "durable:key1:doc:live";
    await http(h, "PUT", `${p}/a`, { value: 1 });
    await http(h, "PATCH", p, { b: 2, c: 3 });
    await http(h, "POST", `${p}/increment`, { slot: "a", by: 4 });
    const m = await h.join(topic, { app_secret: "secret1", after_log_id: 1 });
    assert.deepEqual(m.reply.response, {
      state: { a: 5, b: 2, c: 3 },
      log_id: 3,
      epoch: "0",
      replay: "complete",
      first_log_id: 1,
    });
    assert.deepEqual(m.replayed().map((e) => [e.event, e.payload]), [
      ["batch", {
        log_id: 2,
        ops: [{ op: "set", key: "b", value: 2 }, { op: "set", key: "c", value: 3 }],
      }],
      ["change", { log_id: 3, op: "set", key: "a", value: 5 }],
    ]);

    await http(h, "POST", `${p}/append`, { slot: "l", value: "x" });
    await http(h, "DELETE", `${p}/b`);
    await http(h, "POST", `${p}/transaction`, [{ op: "increment", key: "a" }, {
      op: "delete",
      key: "c",
    }]);
    await h.http("DELETE", p);
    await http(h, "PUT", `${p}/z`, { value: true });
    await m.assertPush("change", (x) => x.log_id === 1);
    const live = m.events().filter((e) => e.kind === "live" && isLive(e.event)).map((
      e,
    ) => [e.event, e.payload]);
    const epoch = (live[3][1] as { epoch: string }).epoch;
    assert.match(epoch, /^[0-9a-f]{8}$/, "a purge starts a new epoch");
    assert.deepEqual(live, [
      ["change", { log_id: 4, op: "set", key: "l", value: ["x"] }],
      ["change", { log_id: 5, op: "delete", key: "b", value: null }],
      ["batch", {
        log_id: 6,
        ops: [{ op: "set", key: "a", value: 6 }, { op: "delete", key: "c", value: null }],
      }],
      ["purge", { log_id: 0, epoch }],
      ["change", { log_id: 1, op: "set", key: "z", value: true }],
    ]);
    // after_log_id beyond the head (the object was purged meanwhile): a flagged fresh snapshot,
    // no replay; the same from another epoch even when the position exists.
    const beyond = await h.join(topic, { app_secret: "secret1", after_log_id: 6 });
    assert.deepEqual(beyond.reply.response, {
      state: { z: true },
      log_id: 1,
      epoch,
      replay: "reset",
      first_log_id: 1,
      reset: true,
    });
    assert.deepEqual(beyond.replayed(), []);
    const old = await h.join(topic, { app_secret: "secret1", after_log_id: 0, epoch: "0" });
    assert.deepEqual(old.reply.response, {
      state: { z: true },
      log_id: 1,
      epoch,
      replay: "reset",
      first_log_id: 1,
      reset: true,
    });
    assert.deepEqual(old.replayed(), []);
    const same = await h.join(topic, { app_secret: "secret1", after_log_id: 0, epoch });
    assert.deepEqual(same.reply.response, {
      state: { z: true },
      log_id: 1,
      epoch,
      replay: "complete",
      first_log_id: 1,
    });
    assert.deepEqual(same.replayed().map((e) => e.payload.log_id), [1], "one replayed change");
  });
});

Deno.test("harness objects: write storm: every member sees exactly 1..N across leaves and rejoins", async () => {
  await withHarness(async (h) => {
    const type = "storm";
    const key = crypto.randomUUID();
    const p = path(type, key);
    const topic = `durable:key1:${type}:${key}`;
    const N = 300;
    let issued = 0;
    const writer = async () => {
      while (issued < N) {
        const i = ++issued;
        if (i % 3 === 0) await http(h, "PATCH", p, { [`p${i % 7}`]: i, last: i });
        else if (i % 3 === 1) await http(h, "POST", `${p}/increment`, { slot: "n" });
        else {
          await http(h, "POST", `${p}/transaction`, [
            { op: "append", key: `l${i % 5}`, value: i },
            { op: "delete", key: `p${i % 7}` },
          ]);
        }
      }
    };
    let joins = 0;
    const subscriber = async (index: number) => {
      const ids: number[] = [];
      const state: Record<string, unknown> = {};
      let m!: Member;
      let cursor = 0;
      // Reads what the member received, in order: the snapshot must match what was applied.
      const drain = () => {
        for (; cursor < m.received.length; cursor++) {
          const r = m.received[cursor];
          if (r.kind === "reply") {
            assert.equal(r.response.log_id, ids.at(-1) ?? 0, `member ${index} snapshot position`);
            assert.deepEqual(r.response.state, state, `member ${index} snapshot state`);
          } else if (
            (r.kind === "push" || r.kind === "live") &&
            (r.event === "change" || r.event === "batch")
          ) {
            ids.push(r.payload.log_id);
            applyEvent(state, r.event, r.payload);
          }
        }
      };
      const join = async () => {
        m = await h.join(
          topic,
          async (socketId) =>
            index % 2 === 0
              ? {
                after_log_id: ids.at(-1) ?? 0,
                auth: (await sb.authenticateObject(socketId, type, key)).auth,
              }
              : { after_log_id: ids.at(-1) ?? 0, app_secret: "secret1" },
        );
        assert.equal(m.reply.status, "ok", JSON.stringify(m.reply));
        joins++;
        cursor = 0;
        drain();
      };
      const reached = async (target: number, ms: number) => {
        const deadline = Date.now() + ms;
        while (Date.now() < deadline) {
          drain();
          if ((ids.at(-1) ?? 0) >= target) return;
          await new Promise((r) => setTimeout(r, 1));
        }
      };
      await join();
      for (let round = 0; issued < N; round++) {
        await reached(Math.min((ids.at(-1) ?? 0) + 5 + ((index * 7 + round * 13) % 40), N), 10_000);
        m.leave();
        await join();
      }
      await reached(N, 15_000);
      m.leave();
      return { ids, state };
    };
    const subs = Array.from({ length: 5 }, (_, i) => subscriber(i));
    await Promise.all(Array.from({ length: 8 }, writer));
    const results = await Promise.all(subs);
    const final = await http(h, "GET", p);
    assert.equal(final.log_id, N);
    assert.ok(joins > subs.length * 2, `only ${joins} joins`);
    for (const [i, r] of results.entries()) {
      assert.deepEqual(r.ids, Array.from({ length: N }, (_, k) => k + 1), `member ${i}`);
      assert.deepEqual(r.state, final.state, `member ${i} final state`);
    }
  });
});
