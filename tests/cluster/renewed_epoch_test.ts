// The epoch renewal on every product: node 3 is fed another message at one log position (the
// fault hook SWITCHBOARD_FAULT_FORK_AT, as by a NATS stream replica that diverged), the one
// write there being a channel event or a chat message; it stops itself, names that stream
// unsure, rebuilds and, once it takes writes again, gives the stream a new epoch in a
// replicated write. Past the window in which every node resets such a resume by itself
// (SWITCHBOARD_CLUSTER_UNSURE_MS, shortened here), a client resuming on another node with a
// cursor of the old epoch (Phoenix `after_serial` / `after_log_id` + `epoch`, Pusher's
// `pusher:subscribe` `after_serial` + `epoch`) still gets `replay: "reset"` with the new epoch
// and nothing replayed; a cursor of the new epoch replays. The renewal's commit empties node 3's
// list of streams to renew.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import type { TestServer } from "../helpers/server.ts";
import { RawPusher } from "../pusher/helpers.ts";
import { sdkFor } from "../pubsub/helpers.ts";
import { StoreEnv, storePath } from "../../lib/store/env.ts";
import { startCluster, until } from "./cluster.ts";
import { appendAt } from "./writers.ts";

const FORK_AT = 5;
const UNSURE_MS = 1500;
const STOPPED = /applied the log differently from a majority of the nodes/;
const HEALED = /cluster node rebuilt its store and takes writes again/;
const RENEWED = /cluster renewed the epochs of the streams/;

/** Appends `value` to the filler object through `node`; its log position. */
const filler = (node: TestServer, value: string) => appendAt(node, "filler", value);

/** Pusher `pusher:subscribe` to `channel` with `data`; the subscription_succeeded message. */
async function pusherSubscribe(pusher: RawPusher, channel: string, data: Record<string, unknown>) {
  const n = pusher.messages.length;
  pusher.send("pusher:subscribe", { channel, ...data });
  const m = await pusher.waitFor((x) =>
    pusher.messages.indexOf(x) >= n && (x.event === "pusher:subscription_error" || x.event === "pusher_internal:subscription_succeeded")
  );
  assert.equal(m.event, "pusher_internal:subscription_succeeded", JSON.stringify(m));
  pusher.send("pusher:unsubscribe", { channel });
  return m;
}

for (const product of ["channel", "chat thread"] as const) {
  Deno.test({
    name: `cluster renewed epoch: a ${product} a diverged node named resets an old-epoch cursor past the unsure window`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const cluster = await startCluster({
        env: {
          SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300",
          SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000",
          SWITCHBOARD_CLUSTER_UNSURE_MS: String(UNSURE_MS),
        },
        nodeEnv: (i): Record<string, string> => (i === 2 ? { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT) } : {}),
      });
      const [n1, , n3] = cluster.nodes;
      const sock = await RawSocket.connect(n1.wsUrl("key1"));
      const pusher = await RawPusher.connect(n1, "key1");
      try {
        // The product's stream gets one entry before the fork, and the one at the fork.
        const topic = product === "channel" ? "pubsub:key1:news" : "chat:key1:t1";
        const offset = product === "channel" ? "serial" : "log_id";
        const params = product === "channel" ? {} : { client_id: "x" };
        const write = async (text: string) => {
          if (product === "channel") await sdkFor(n1).trigger("news", "e", { text });
          else {
            const r = await api(n1, "POST", "/api/chat/threads/t1/messages", doc("messages", { role: "user", content: text }, { id: text }));
            assert.equal(r.status, 201, JSON.stringify(r.body));
          }
        };
        /** Joins `topic` on `node` from `cursor`; the reply and the frames pushed before it. */
        const join = async (node: TestServer, cursor: Record<string, unknown>) => {
          const s = await RawSocket.connect(node.wsUrl("key1"));
          try {
            const reply = await s.join(topic, { ...params, ...cursor });
            assert.equal(reply.status, "ok", JSON.stringify(reply.response));
            return { response: reply.response, replayed: s.frames.filter((f) => f[2] === topic && !f[3].startsWith("phx_")).length };
          } finally {
            await s.close();
          }
        };
        if (product === "chat thread") await makeThread(n1, "t1");
        await write("before");
        let position = await filler(n1, "f");
        assert.ok(position < FORK_AT, `the writes before the fork land before position ${FORK_AT} (at ${position})`);
        while (position < FORK_AT - 1) position = await filler(n1, "f");
        await write("forked");
        assert.equal(await filler(n1, "after"), FORK_AT + 1, "the product's write is the one at the fork");
        // The cursor of a client that holds the entry at the fork (node 3 sent it another one).
        const at = await join(n1, {});
        const cursor = at.response[offset] as number;
        const old = { [`after_${offset}`]: cursor, epoch: "0" };
        assert.equal(at.response.epoch, "0");
        await filler(n1, "after");

        await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
        const stoppedAt = Date.now();
        await until("node 3 rebuilds its store", () => Promise.resolve(HEALED.test(n3.output())), 60_000);
        await until("node 3 renews the epochs of the streams it named", () => Promise.resolve(RENEWED.test(n3.output())), 30_000);
        await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + UNSURE_MS + 1000 - Date.now())));

        // Past the window: the old cursor resets into the new epoch, on Phoenix and on Pusher.
        const reset = await join(n1, old);
        assert.equal(reset.response.replay, "reset", JSON.stringify(reset.response));
        assert.equal(reset.replayed, 0, "nothing replayed");
        const epoch = reset.response.epoch as string;
        assert.notEqual(epoch, "0", "a new epoch");
        assert.equal(reset.response[offset], cursor, "entries kept: the same head");
        if (product === "channel") {
          const p = await pusherSubscribe(pusher, "news", { after_serial: cursor, epoch: "0" });
          assert.deepEqual([p.replay, p.epoch, p.serial], ["reset", epoch, cursor]);
          const q = await pusherSubscribe(pusher, "news", { after_serial: cursor - 1, epoch });
          assert.deepEqual([q.replay, q.epoch], ["complete", epoch]);
        }
        // A cursor of the new epoch replays.
        const resumed = await join(n1, { [`after_${offset}`]: cursor - 1, epoch });
        assert.equal(resumed.response.replay, "complete", JSON.stringify(resumed.response));
        assert.equal(resumed.replayed, 1);
        // Every node holds the new epoch.
        for (const node of cluster.nodes) assert.equal((await join(node, {})).response.epoch, epoch);

        // Node 3's list of streams to renew was emptied by the renewal's own commit (a restart
        // renews nothing again), and its store holds the new epoch.
        await cluster.kill(2);
        const store = new StoreEnv(storePath(n3.dataDir), false);
        try {
          assert.deepEqual([...store.db("cluster:unsure").getKeys()], []);
          const log = product === "channel" ? "channels" : "chat";
          assert.equal(store.db(`${log}:epochs`).get(product === "channel" ? "app-1/news" : "app-1/t1"), epoch);
        } finally {
          await store.close();
        }
      } finally {
        pusher.close();
        await sock.close();
        await cluster.stop();
      }
    },
  });
}
