// The epoch renewal on every product: node 3 is fed another message at one log position (the
// fault hook SWITCHBOARD_FAULT_FORK_AT, as by a NATS stream replica that diverged), the one
// write there being a channel event or a chat message; it stops itself and names that stream
// unsure (`sb.unsure`), and the stream gets a new epoch in a replicated write, once, from
// whichever node lands it first (the healthy ones at once, node 3 once rebuilt). Past the window
// in which every node resets such a resume by itself (SWITCHBOARD_CLUSTER_UNSURE_MS, shortened
// here), a client resuming on another node with a cursor of the old epoch (Phoenix
// `after_serial` / `after_log_id` + `epoch`, Pusher's `pusher:subscribe` `after_serial` +
// `epoch`) still gets `replay: "reset"` with the new epoch and nothing replayed; a cursor of the
// new epoch replays; a cursor without an epoch resets inside the unsure positions and replays
// outside them. Also when node 3 is killed once stopped and never comes back: the healthy nodes
// renew by themselves. The renewal empties every node's list of streams to renew.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import type { TestServer } from "../helpers/server.ts";
import { RawPusher } from "../pusher/helpers.ts";
import { sdkFor } from "../pubsub/helpers.ts";
import { StoreEnv, storePath } from "../../lib/store/env.ts";
import { startForkedCluster, until } from "./cluster.ts";
import { appendAt } from "./writers.ts";

const FORK_AT = 5;
/** The fork of the test whose node 3 never comes back: far enough from the stream's first
 * write that a majority confirmed that write before node 3 forks. */
const LATE_FORK_AT = 12;
const UNSURE_MS = 1500;
const STOPPED = /applied the log differently from a majority of the nodes/;
const HEALED = /cluster node rebuilt its store and takes writes again/;
const RENEWED = /cluster renewed the epochs of the streams/;
/** Node 3's own renewal: done by it, or found done by another node. */
const RENEWED_OR_FOUND = /cluster (renewed|found) the epochs of the streams/;
/** The renewals a node logged: how many streams it renewed. */
const renewals = (node: TestServer) =>
  node.output().split("\n").filter((l) => RENEWED.test(l)).map((l) =>
    Number(/streams=(\d+)/.exec(l)?.[1])
  );

/** Appends `value` to the filler object through `node`; its log position. */
const filler = (node: TestServer, value: string) => appendAt(node, "filler", value);

/** Pusher `pusher:subscribe` to `channel` with `data`; the subscription_succeeded message. */
async function pusherSubscribe(pusher: RawPusher, channel: string, data: Record<string, unknown>) {
  const n = pusher.messages.length;
  pusher.send("pusher:subscribe", { channel, ...data });
  const m = await pusher.waitFor((x) =>
    pusher.messages.indexOf(x) >= n &&
    (x.event === "pusher:subscription_error" ||
      x.event === "pusher_internal:subscription_succeeded")
  );
  assert.equal(m.event, "pusher_internal:subscription_succeeded", JSON.stringify(m));
  pusher.send("pusher:unsubscribe", { channel });
  return m;
}

for (const product of ["channel", "chat thread"] as const) {
  Deno.test({
    name:
      `cluster renewed epoch: a ${product} a diverged node named resets an old-epoch cursor past the unsure window`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const cluster = await startForkedCluster(
        { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT) },
        { SWITCHBOARD_CLUSTER_UNSURE_MS: String(UNSURE_MS) },
      );
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
            const r = await api(
              n1,
              "POST",
              "/api/chat/threads/t1/messages",
              doc("messages", { role: "user", content: text }, { id: text }),
            );
            assert.equal(r.status, 201, JSON.stringify(r.body));
          }
        };
        /** Joins `topic` on `node` from `cursor`; the reply and the frames pushed before it. */
        const join = async (node: TestServer, cursor: Record<string, unknown>) => {
          const s = await RawSocket.connect(node.wsUrl("key1"));
          try {
            const reply = await s.join(topic, { ...params, ...cursor });
            assert.equal(reply.status, "ok", JSON.stringify(reply.response));
            return {
              response: reply.response,
              replayed: s.frames.filter((f) => f[2] === topic && !f[3].startsWith("phx_")).length,
            };
          } finally {
            await s.close();
          }
        };
        if (product === "chat thread") await makeThread(n1, "t1");
        await write("before");
        let position = await filler(n1, "f");
        assert.ok(
          position < FORK_AT,
          `the writes before the fork land before position ${FORK_AT} (at ${position})`,
        );
        while (position < FORK_AT - 1) position = await filler(n1, "f");
        await write("forked");
        assert.equal(
          await filler(n1, "after"),
          FORK_AT + 1,
          "the product's write is the one at the fork",
        );
        // The cursor of a client that holds the entry at the fork (node 3 sent it another one),
        // in the epoch it had then (the healthy nodes may have renewed it already).
        const at = await join(n1, {});
        const cursor = at.response[offset] as number;
        const old = { [`after_${offset}`]: cursor, epoch: "0" };
        await filler(n1, "after");

        await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
        const stoppedAt = Date.now();
        await until(
          "node 3 rebuilds its store",
          () => Promise.resolve(HEALED.test(n3.output())),
          60_000,
        );
        await until(
          "a node renews the epochs of the streams node 3 named",
          () => Promise.resolve(cluster.nodes.some((n) => RENEWED.test(n.output()))),
          30_000,
        );
        await until(
          "node 3 sees them renewed",
          () => Promise.resolve(RENEWED_OR_FOUND.test(n3.output())),
          30_000,
        );
        await new Promise((r) =>
          setTimeout(r, Math.max(0, stoppedAt + UNSURE_MS + 1000 - Date.now()))
        );

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
        for (const node of cluster.nodes) {
          assert.equal((await join(node, {})).response.epoch, epoch);
        }

        // Renewed once for the cluster: the streams renewed, as logged by every node, are the
        // renewals recorded.
        const logged = cluster.nodes.flatMap(renewals).reduce((a, b) => a + b, 0);
        // Node 3's list of streams to renew was emptied (a restart renews nothing again), and
        // its store holds the new epoch.
        await cluster.kill(2);
        const store = new StoreEnv(storePath(n3.dataDir), false);
        try {
          assert.deepEqual([...store.db("cluster:unsure-renew").getKeys()], []);
          assert.equal(
            [...store.db("cluster:unsure-renewed").getKeys()].length,
            logged,
            "each stream renewed once",
          );
          const log = product === "channel" ? "channels" : "chat";
          assert.equal(
            store.db(`${log}:epochs`).get(product === "channel" ? "app-1/news" : "app-1/t1"),
            epoch,
          );
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

Deno.test({
  name:
    "cluster renewed epoch: a node that stopped itself and never comes back; the healthy nodes renew its streams",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Node 3 forks, and would rebuild only 30 s after it stopped (it is killed before).
    const cluster = await startForkedCluster(
      {
        SWITCHBOARD_FAULT_FORK_AT: String(LATE_FORK_AT),
        SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "30000",
      },
      { SWITCHBOARD_CLUSTER_UNSURE_MS: String(UNSURE_MS) },
    );
    const [n1, n2, n3] = cluster.nodes;
    const pusher = await RawPusher.connect(n1, "key1");
    const topic = "pubsub:key1:news";
    /** Joins `news` on `node` from `cursor`; the reply and the serials pushed before it. */
    const join = async (node: TestServer, cursor: Record<string, unknown>) => {
      const s = await RawSocket.connect(node.wsUrl("key1"));
      try {
        const reply = await s.join(topic, cursor);
        assert.equal(reply.status, "ok", JSON.stringify(reply.response));
        const replayed = s.frames.filter((f) => f[2] === topic && !f[3].startsWith("phx_")).map((
          f,
        ) => (f[4] as { serial: number }).serial);
        return { response: reply.response, replayed };
      } finally {
        await s.close();
      }
    };
    try {
      const trigger = (text: string) => sdkFor(n1).trigger("news", "e", { text });
      // Serial 1 well before the fork (a majority confirmed it); serial 2 is the one write at
      // the fork (node 3 sends its subscribers another entry there).
      await trigger("before");
      let position = await filler(n1, "f");
      assert.ok(position < 4, `the first writes land early (at ${position})`);
      while (position < LATE_FORK_AT - 1) position = await filler(n1, "f");
      await trigger("forked");
      assert.equal(
        await filler(n1, "after"),
        LATE_FORK_AT + 1,
        "the channel's write is the one at the fork",
      );
      assert.equal((await join(n1, {})).response.serial, 2);

      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
      const stoppedAt = Date.now();
      // Node 1 heard node 3's report (a resume at the unsure serial resets), then node 3 is
      // gone for good, before it rebuilt anything.
      await until(
        "node 1 heard which streams node 3 named",
        async () => (await join(n1, { after_serial: 2, epoch: "0" })).response.replay === "reset",
      );
      await cluster.kill(2);
      assert.ok(
        !HEALED.test(n3.output()) && !RENEWED_OR_FOUND.test(n3.output()),
        "node 3 renewed nothing",
      );
      await until(
        "the healthy nodes renew the epoch of the stream node 3 named",
        () => Promise.resolve(RENEWED.test(n1.output() + n2.output())),
        30_000,
      );
      let epoch = "0";
      await until(
        "node 1 applied the new epoch",
        async () => (epoch = (await join(n1, {})).response.epoch as string) !== "0",
      );
      // Later writes (serials 3-5) go on in the new epoch.
      for (const text of ["x", "y", "z"]) await trigger(text);
      await until("node 2 applied them", async () => (await join(n2, {})).response.serial === 5);
      await new Promise((r) =>
        setTimeout(r, Math.max(0, stoppedAt + UNSURE_MS + 1000 - Date.now()))
      );

      // Past the window. A cursor of the old epoch resets, wherever it is.
      for (const [node, serial] of [[n1, 2], [n2, 1]] as const) {
        const r = await join(node, { after_serial: serial, epoch: "0" });
        assert.deepEqual([r.response.replay, r.response.epoch, r.response.serial, r.replayed], [
          "reset",
          epoch,
          5,
          [],
        ], JSON.stringify(r.response));
      }
      const p = await pusherSubscribe(pusher, "news", { after_serial: 2, epoch: "0" });
      assert.deepEqual([p.replay, p.epoch, p.serial], ["reset", epoch, 5]);
      // A cursor without an epoch at the unsure serial resets; below or above it replays.
      const inside = await join(n2, { after_serial: 2 });
      assert.deepEqual(
        [inside.response.replay, inside.replayed],
        ["reset", []],
        JSON.stringify(inside.response),
      );
      const q = await pusherSubscribe(pusher, "news", { after_serial: 2 });
      assert.deepEqual([q.replay, q.serial], ["reset", 5]);
      const below = await join(n1, { after_serial: 1 });
      assert.deepEqual(
        [below.response.replay, below.replayed],
        ["complete", [2, 3, 4, 5]],
        JSON.stringify(below.response),
      );
      const above = await join(n2, { after_serial: 3 });
      assert.deepEqual(
        [above.response.replay, above.replayed],
        ["complete", [4, 5]],
        JSON.stringify(above.response),
      );
      // A cursor of the new epoch replays, at the unsure serial too.
      const renewed = await join(n1, { after_serial: 2, epoch });
      assert.deepEqual(
        [renewed.response.replay, renewed.replayed],
        ["complete", [3, 4, 5]],
        JSON.stringify(renewed.response),
      );

      // Renewed once for the cluster, and both healthy nodes' lists emptied.
      const logged = [n1, n2].flatMap(renewals).reduce((a, b) => a + b, 0);
      await cluster.kill(0);
      await cluster.kill(1);
      for (const node of [n1, n2]) {
        const store = new StoreEnv(storePath(node.dataDir), false);
        try {
          assert.deepEqual(
            [...store.db("cluster:unsure-renew").getKeys()],
            [],
            "nothing left to renew",
          );
          const done = [...store.db("cluster:unsure-renewed").getKeys()] as [
            string,
            string,
            string,
          ][];
          assert.ok(
            done.some(([, log, stream]) => log === "channels" && stream === "app-1/news"),
            JSON.stringify(done),
          );
          assert.equal(done.length, logged, "each stream renewed once");
          assert.equal(store.db("channels:epochs").get("app-1/news"), epoch);
        } finally {
          await store.close();
        }
      }
    } finally {
      pusher.close();
      await cluster.stop();
    }
  },
});
