import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { call, trigger } from "../pubsub/helpers.ts";

// Replay, partial replay and reset joins run in-process in tests/harness/pubsub_test.ts; this
// storm of real socket reconnects stays here.

Deno.test("reconnect storm: every subscriber sees every serial exactly once and in order", async () => {
  const server = await startInProcess();
  const TOTAL = 300;
  const SUBSCRIBERS = 6;
  const topic = "pubsub:key1:storm";
  let publishing = true;
  try {
    const subscriber = async () => {
      const seen: number[] = [];
      let cycles = 0;
      while (seen.length < TOTAL) {
        const s = await RawSocket.connect(server.wsUrl("key1"));
        const last = seen.length ? seen[seen.length - 1] : 0;
        const j = await s.join(topic, { after_serial: last });
        assert.equal(j.status, "ok");
        assert.equal(j.response.replay, "complete");
        // Stay for a short random while, or until everything arrived once publishing stopped.
        const until = Date.now() + (publishing ? 5 + Math.random() * 40 : 3000);
        while (Date.now() < until) {
          const got = s.events(topic, "ev").length;
          if (last + got >= TOTAL) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        await s.close();
        for (const f of s.events(topic, "ev")) seen.push((f[4] as { serial: number }).serial);
        if (++cycles > 200) throw new Error("too many cycles");
      }
      return { seen, cycles };
    };
    const subs = Array.from({ length: SUBSCRIBERS }, () => subscriber());
    // Publish in parallel lanes (trigger and push) so appends interleave with joins.
    const lane = async (n: number) => {
      for (let i = 0; i < n; i++) {
        if (i % 5 === 0) {
          const r = await call(server, "POST", "/api/apps/app-1/push", {
            events: [{ channel: "storm", event: "ev", data: i }, {
              channel: "storm",
              event: "ev",
              data: i,
            }],
          });
          assert.equal(r.status, 200);
          i++;
        } else assert.equal((await trigger(server, "storm", "ev", i)).status, 200);
      }
    };
    await Promise.all([lane(100), lane(100), lane(100)]);
    publishing = false;
    const results = await Promise.all(subs);
    const expected = Array.from({ length: TOTAL }, (_, i) => i + 1);
    for (const { seen, cycles } of results) {
      assert.deepEqual(seen, expected);
      assert.ok(cycles >= 2, "each subscriber reconnected at least once");
    }
  } finally {
    await server.stop();
  }
});
