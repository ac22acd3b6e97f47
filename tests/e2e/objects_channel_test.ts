// End-to-end tests of the Durable Object channel with RawSocket: join auth and reasons,
// snapshot, replay with after_log_id, live change / batch / purge payloads, the read-only
// refusal, and exact delivery under a write storm while subscribers join, leave and rejoin.
import assert from "node:assert/strict";
import { type Frame, RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { Switchboard } from "../../sdk/server/mod.ts";

const server = await startServer();
const H = server.headers();
const sb = new Switchboard({ baseUrl: server.baseUrl, appKey: "key1", appSecret: "secret1" });

function path(type: string, key: string): string {
  return `/api/v1/objects/app-1/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;
}

async function http(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(server.baseUrl + p, {
    method,
    headers: H,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${p}: ${res.status} ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}

/** Applies a change / batch / purge frame payload to a local copy of the state. */
function applyEvent(state: Record<string, unknown>, event: string, payload: any): void {
  const ops = event === "batch" ? payload.ops : event === "change" ? [payload] : [];
  if (event === "purge") for (const k of Object.keys(state)) delete state[k];
  for (const op of ops) {
    if (op.op === "delete") delete state[op.key];
    else state[op.key] = op.value;
  }
}

const isLive = (f: Frame) => f[3] === "change" || f[3] === "batch" || f[3] === "purge";

Deno.test({
  name: "objects channel",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    try {
      await t.step("join auth: reasons, token, wildcard token, app_secret", async () => {
        const sock = await RawSocket.connect(server.wsUrl());
        const other = await RawSocket.connect(server.wsUrl());
        const topic = "durable:key1:doc:a:b";
        await http("PUT", `${path("doc", "a:b")}/x`, { value: 1 });
        const reason = async (params: Record<string, unknown>) =>
          (await sock.join(topic, params)).response.reason;
        assert.equal(await reason({}), "auth required for durable object channels");
        assert.equal(await reason({ auth: "" }), "auth required for durable object channels");
        assert.equal(await reason({ app_secret: "wrong" }), "invalid app_secret");
        assert.equal(await reason({ auth: "garbage" }), "invalid token");
        const foreign = await sb.authenticateObject(other.socketId, "doc", "a:b");
        assert.equal(await reason({ auth: foreign.auth }), "invalid token");
        const wrongObject = await sb.authenticateObject(sock.socketId, "doc", "a:c");
        assert.equal(await reason({ auth: wrongObject.auth }), "forbidden: missing object:read:doc/a:b");

        const good = await sb.authenticateObject(sock.socketId, "doc", "a:b");
        const ok = await sock.join(topic, { auth: good.auth });
        assert.deepEqual(ok, { status: "ok", response: { state: { x: 1 }, log_id: 1, epoch: "0" }, joinRef: ok.joinRef });
        const wild = await sb.mintFastToken(sock.socketId, ["object:read:doc/*"]);
        assert.equal((await sock.join(topic, { auth: wild })).status, "ok");
        const bySecret = await other.join(topic, { app_secret: "secret1" });
        assert.deepEqual(bySecret.response, { state: { x: 1 }, log_id: 1, epoch: "0" });
        assert.equal((await other.join("durable:key1:t:k", { app_secret: "secret1", after_log_id: "x" })).response.reason, "invalid after_log_id");

        const current = await sock.join(topic, { auth: good.auth });
        const refused = await sock.push(topic, current.joinRef, "set", { key: "x", value: 2 });
        assert.deepEqual(refused, { status: "error", response: { reason: "writes must go through the server SDK" } });
        await sock.close();
        await other.close();
      });

      await t.step("replay before the reply, then live change / batch / purge payloads", async () => {
        const p = path("doc", "live");
        const topic = "durable:key1:doc:live";
        await http("PUT", `${p}/a`, { value: 1 });
        await http("PATCH", p, { b: 2, c: 3 });
        await http("POST", `${p}/increment`, { slot: "a", by: 4 });
        const sock = await RawSocket.connect(server.wsUrl());
        const joined = await sock.join(topic, { app_secret: "secret1", after_log_id: 1 });
        assert.deepEqual(joined.response, { state: { a: 5, b: 2, c: 3 }, log_id: 3, epoch: "0", replay: "complete", first_log_id: 1 });
        const replyIndex = sock.frames.findIndex((f) => f[3] === "phx_reply" && f[1] === joined.joinRef);
        const replayed = sock.frames.slice(0, replyIndex).filter(isLive);
        assert.deepEqual(replayed.map((f) => [f[3], f[4]]), [
          ["batch", { log_id: 2, ops: [{ op: "set", key: "b", value: 2 }, { op: "set", key: "c", value: 3 }] }],
          ["change", { log_id: 3, op: "set", key: "a", value: 5 }],
        ]);

        await http("POST", `${p}/append`, { slot: "l", value: "x" });
        await http("DELETE", `${p}/b`);
        await http("POST", `${p}/transaction`, [{ op: "increment", key: "a" }, { op: "delete", key: "c" }]);
        await fetch(server.baseUrl + p, { method: "DELETE", headers: H }).then((r) => r.body?.cancel());
        await http("PUT", `${p}/z`, { value: true });
        await sock.waitFor((f) => f[3] === "change" && f[4].log_id === 1);
        const live = sock.frames.slice(replyIndex + 1).filter(isLive).map((f) => [f[0], f[3], f[4]]);
        const epoch = (live[3][2] as { epoch: string }).epoch;
        assert.match(epoch, /^[0-9a-f]{8}$/, "a purge starts a new epoch");
        assert.deepEqual(live, [
          [null, "change", { log_id: 4, op: "set", key: "l", value: ["x"] }],
          [null, "change", { log_id: 5, op: "delete", key: "b", value: null }],
          [null, "batch", { log_id: 6, ops: [{ op: "set", key: "a", value: 6 }, { op: "delete", key: "c", value: null }] }],
          [null, "purge", { log_id: 0, epoch }],
          [null, "change", { log_id: 1, op: "set", key: "z", value: true }],
        ]);
        // after_log_id beyond the head (the object was purged meanwhile): a flagged fresh
        // snapshot, no replay; the same from another epoch even when the position exists.
        const again = await RawSocket.connect(server.wsUrl());
        const j = await again.join(topic, { app_secret: "secret1", after_log_id: 6 });
        // (`replay` and `first_log_id` as on channels; `reset: true` kept for one release.)
        const reset = { replay: "reset", first_log_id: 1, reset: true };
        assert.deepEqual(j.response, { state: { z: true }, log_id: 1, epoch, ...reset });
        const old = await again.join(topic, { app_secret: "secret1", after_log_id: 0, epoch: "0" });
        assert.deepEqual(old.response, { state: { z: true }, log_id: 1, epoch, ...reset });
        const same = await again.join(topic, { app_secret: "secret1", after_log_id: 0, epoch });
        assert.deepEqual(same.response, { state: { z: true }, log_id: 1, epoch, replay: "complete", first_log_id: 1 });
        assert.equal(again.frames.filter((f) => f[3] === "change").length, 1, "one replayed change");
        await sock.close();
        await again.close();
      });

      await t.step("write storm: every subscriber sees exactly 1..N across leaves and rejoins", async () => {
        const type = "storm";
        const key = crypto.randomUUID();
        const p = path(type, key);
        const topic = `durable:key1:${type}:${key}`;
        const N = 300;
        let issued = 0;
        const writer = async () => {
          while (issued < N) {
            const i = ++issued;
            if (i % 3 === 0) await http("PATCH", p, { [`p${i % 7}`]: i, last: i });
            else if (i % 3 === 1) await http("POST", `${p}/increment`, { slot: "n" });
            else {
              await http("POST", `${p}/transaction`, [
                { op: "append", key: `l${i % 5}`, value: i },
                { op: "delete", key: `p${i % 7}` },
              ]);
            }
          }
        };

        let ready = 0;
        let joins = 0;
        const subscriber = async (index: number) => {
          const ids: number[] = [];
          const state: Record<string, unknown> = {};
          let sock = await RawSocket.connect(server.wsUrl());
          let cursor = 0;
          let joinRef = "";
          const useToken = index % 2 === 0;
          const join = async () => {
            const params: Record<string, unknown> = { after_log_id: ids.at(-1) ?? 0 };
            if (useToken) params.auth = (await sb.authenticateObject(sock.socketId, type, key)).auth;
            else params.app_secret = "secret1";
            const r = await sock.join(topic, params);
            assert.equal(r.status, "ok");
            joinRef = r.joinRef;
            joins++;
          };
          const drain = () => {
            for (; cursor < sock.frames.length; cursor++) {
              const f = sock.frames[cursor];
              if (f[2] !== topic) continue;
              if (f[3] === "change" || f[3] === "batch") {
                ids.push(f[4].log_id as number);
                applyEvent(state, f[3], f[4]);
              } else if (f[3] === "phx_reply" && f[1] === joinRef && f[4].status === "ok") {
                const snap = (f[4] as any).response;
                assert.equal(snap.log_id, ids.at(-1) ?? 0, `subscriber ${index} snapshot position`);
                assert.deepEqual(snap.state, state, `subscriber ${index} snapshot state`);
              }
            }
          };
          await join();
          drain();
          ready++;
          for (let round = 0; issued < N; round++) {
            const target = (ids.at(-1) ?? 0) + 5 + ((index * 7 + round * 13) % 40);
            await sock.waitFor((f) => isLive(f) && (f[4].log_id as number) >= Math.min(target, N), 10_000)
              .catch(() => {});
            drain();
            if (round % 2 === 0) {
              await sock.push(topic, joinRef, "phx_leave", {});
              drain();
            } else {
              await sock.close();
              drain();
              sock = await RawSocket.connect(server.wsUrl());
              cursor = 0;
            }
            await join();
            drain();
          }
          if (ids.at(-1) !== N) {
            await sock.waitFor((f) => f[2] === topic && isLive(f) && f[4].log_id === N, 15_000);
            drain();
          }
          await sock.close();
          return { ids, state };
        };

        const subs = Array.from({ length: 5 }, (_, i) => subscriber(i));
        // Start writing once every subscriber joined, so rejoins happen while writes pour in.
        for (let i = 0; i < 500 && ready < subs.length; i++) await new Promise((r) => setTimeout(r, 10));
        await Promise.all(Array.from({ length: 8 }, writer));
        const results = await Promise.all(subs);
        const final = await http("GET", p);
        assert.equal(final.log_id, N);
        assert.ok(joins > subs.length * 2, `only ${joins} joins`);
        for (const [i, r] of results.entries()) {
          assert.deepEqual(r.ids, Array.from({ length: N }, (_, k) => k + 1), `subscriber ${i}`);
          assert.deepEqual(r.state, final.state, `subscriber ${i} final state`);
        }
      });
    } finally {
      await server.stop();
    }
  },
});
