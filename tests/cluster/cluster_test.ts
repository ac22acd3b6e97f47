// Clustered mode on a loopback NATS JetStream cluster (3 nats-server processes) with 3
// Switchboard nodes: writes from every node land at contiguous positions, every node applies
// and delivers them exactly, joins on one node during a storm on another are exact, node 3
// drops log deliveries (fault hook) and repairs them from the stream, events kept in no log
// and presence cross nodes, and chat REST state written on one node reads on the others.
import assert from "node:assert/strict";
import { type Frame, RawSocket } from "../helpers/raw_socket.ts";
import { APPS, type TestServer } from "../helpers/server.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { call, sdkFor } from "../pubsub/helpers.ts";
import { api, doc } from "../chat_rest/helpers.ts";
import { startCluster } from "./cluster.ts";
import {
  client as pusherClient,
  collect,
  type Pusher,
  serverLib,
  subscribed,
  until as pusherUntil,
} from "../pusher/helpers.ts";
import { client, until } from "../chat_live/helpers.ts";

const objectPath = (type: string, key: string) => `/api/v1/objects/app-1/${type}/${key}`;

async function increment(node: TestServer, type: string, key: string): Promise<number | null> {
  const r = await call(node, "POST", `${objectPath(type, key)}/increment`, { slot: "n" });
  if (r.status !== 200) return null;
  return r.body.log_id;
}

/** Polls `fn` until it returns true (or fails after `ms`). */
async function eventually(what: string, fn: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not within ${ms} ms: ${what}`);
}

const logIds = (frames: Frame[], topic: string) =>
  frames.filter((f) => f[2] === topic && f[3] === "change").map((f) => f[4].log_id as number);

const range = (from: number, to: number) =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

Deno.test({
  name: "cluster: ordering, exact joins, repair, relay, presence and chat across 3 nodes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const hook = receiver();
    const cluster = await startCluster({
      apps: [
        {
          ...APPS[0],
          webhooks: [{
            url: hook.url,
            event_types: ["channel_occupied", "channel_vacated", "member_added", "member_removed"],
          }],
        },
        ...APPS.slice(1),
      ],
      env: { SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300" },
      // Node 3 loses 30% of the log deliveries it is sent and must fetch them from the stream.
      nodeEnv: (i): Record<string, string> =>
        i === 2 ? { SWITCHBOARD_FAULT_DROP_LOG_DELIVERY: "0.3" } : {},
    });
    const sockets: RawSocket[] = [];
    const pushers: Pusher[] = [];
    const pusher = (node: TestServer) => {
      const p = pusherClient(node);
      pushers.push(p);
      return p;
    };
    const connect = async (node: TestServer) => {
      const s = await RawSocket.connect(node.wsUrl());
      sockets.push(s);
      return s;
    };
    try {
      const nodes = cluster.nodes;

      await t.step(
        "8 writers across 3 nodes on one object: positions 1..N, counter = acknowledged",
        async () => {
          const topic = "durable:key1:counter:one";
          const watchers = await Promise.all(nodes.map(async (n) => {
            const s = await connect(n);
            assert.equal((await s.join(topic, { app_secret: "secret1" })).status, "ok");
            return s;
          }));
          const acked: number[] = [];
          await Promise.all(
            range(0, 7).map(async (w) => {
              for (let i = 0; i < 30; i++) {
                const id = await increment(nodes[w % 3], "counter", "one");
                assert.ok(id !== null, "no write fails with every node up");
                acked.push(id);
              }
            }),
          );
          const n = acked.length;
          assert.deepEqual(
            [...acked].sort((a, b) => a - b),
            range(1, n),
            "acknowledged positions are 1..N",
          );
          for (const node of nodes) {
            await eventually(`node ${node.port} has log_id ${n}`, async () => {
              const r = await call(node, "GET", objectPath("counter", "one"));
              return r.body.log_id === n;
            });
            const r = await call(node, "GET", objectPath("counter", "one"));
            assert.deepEqual(
              r.body,
              { state: { n }, log_id: n },
              "counter = acknowledged increments, on every node",
            );
          }
          for (const [i, s] of watchers.entries()) {
            await s.waitFor((f) => f[2] === topic && f[4].log_id === n, 10_000);
            assert.deepEqual(
              logIds(s.frames, topic),
              range(1, n),
              `subscriber on node ${i + 1} saw 1..N in order`,
            );
            const values = s.frames.filter((f) => f[2] === topic && f[3] === "change").map((f) =>
              f[4].value
            );
            assert.deepEqual(values, range(1, n));
          }
        },
      );

      await t.step("readiness and metrics name the node and its applied log position", async () => {
        for (const [i, node] of nodes.entries()) {
          const ready = await fetch(`${node.baseUrl}/readyz`);
          assert.deepEqual(await ready.json(), { status: "ready" });
          const metrics = await (await fetch(`${node.baseUrl}/metrics`)).text();
          const m = metrics.match(
            new RegExp(`switchboard_cluster_applied_position\\{node="node-${i + 1}"\\} (\\d+)`),
          );
          assert.ok(m && Number(m[1]) > 0, `node-${i + 1} reports its applied position`);
        }
      });

      await t.step("joins on node 2 and node 3 during a storm on node 1 are exact", async () => {
        const topic = "durable:key1:storm:s";
        let stop = false;
        const storm = (async () => {
          let count = 0;
          while (!stop) {
            await Promise.all(range(1, 4).map(() => increment(nodes[0], "storm", "s")));
            count += 4;
          }
          return count;
        })();
        const joiners: { s: RawSocket; from: number; state: number }[] = [];
        for (let k = 0; k < 8; k++) {
          await new Promise((r) => setTimeout(r, 60));
          const s = await connect(nodes[1 + (k % 2)]);
          const j = await s.join(topic, { app_secret: "secret1" });
          assert.equal(j.status, "ok");
          joiners.push({
            s,
            from: j.response.log_id as number,
            state: (j.response.state as { n?: number }).n ?? 0,
          });
        }
        stop = true;
        const stormed = await storm;
        // The last join can reply after node 1's in-flight writes were applied on its node but
        // before node 1 acknowledged them here: it then joins at log_id === stormed and no live
        // frame of the storm is left for it. One more write, made after every join replied,
        // gives every joiner a live frame to wait for.
        const total = await increment(nodes[0], "storm", "s");
        assert.equal(total, stormed + 1);
        for (const { s, from, state } of joiners) {
          assert.equal(state, from, "the snapshot's counter equals its log_id");
          await s.waitFor((f) => f[2] === topic && f[4].log_id === total, 10_000);
          assert.deepEqual(
            logIds(s.frames, topic),
            range(from + 1, total),
            `joined at ${from}: then exactly ${from + 1}..${total}`,
          );
        }
        assert.ok(
          joiners.some((j) => j.from > 0 && j.from < stormed),
          "some joins happened mid-storm",
        );
      });

      await t.step(
        "a rejoin with after_log_id on another node replays exactly the missed entries",
        async () => {
          const topic = "durable:key1:storm:s";
          const s = await connect(nodes[2]);
          const j = await s.join(topic, { app_secret: "secret1", after_log_id: 5 });
          const head = j.response.log_id as number;
          const reply = s.frames.findIndex((f) => f[3] === "phx_reply");
          assert.deepEqual(logIds(s.frames.slice(0, reply), topic), range(6, head));
        },
      );

      await t.step(
        "channel events triggered on every node reach every node in serial order",
        async () => {
          const topic = "pubsub:key1:feed";
          const subs = await Promise.all(nodes.map(async (n) => {
            const s = await connect(n);
            assert.equal((await s.join(topic, {})).status, "ok");
            return s;
          }));
          for (let i = 0; i < 30; i++) {
            const r = await call(nodes[i % 3], "POST", "/api/apps/app-1/trigger", {
              channel: "feed",
              event: "e",
              data: { i },
            });
            assert.equal(r.status, 200);
          }
          for (const s of subs) {
            await s.waitFor((f) => f[2] === topic && f[4].serial === 30, 10_000);
            const got = s.frames.filter((f) => f[2] === topic && f[3] === "e");
            assert.deepEqual(got.map((f) => f[4].serial), range(1, 30));
            assert.deepEqual(got.map((f) => (f[4].data as { i: number }).i), range(0, 29));
          }
          const late = await connect(nodes[1]);
          await late.join(topic, { after_serial: 25 });
          const replayed = late.frames.filter((f) => f[2] === topic && f[3] === "e").map((f) =>
            f[4].serial
          );
          assert.deepEqual(replayed, range(26, 30), "history replays on any node");
        },
      );

      await t.step(
        "a Pusher trigger's socket_id excludes that socket whichever node it is on",
        async () => {
          const [a, b] = [pusher(nodes[1]), pusher(nodes[2])];
          const [gotA, gotB] = [
            collect(await subscribed(a, "excluding"), "ev"),
            collect(await subscribed(b, "excluding"), "ev"),
          ];
          const lib = serverLib(nodes[0]);
          assert.equal(
            (await lib.trigger("excluding", "ev", 1, { socket_id: a.connection.socket_id })).status,
            200,
          );
          assert.equal(
            (await lib.trigger("excluding", "ev", 2, { socket_id: b.connection.socket_id })).status,
            200,
          );
          assert.equal((await lib.trigger("excluding", "ev", 3)).status, 200);
          await pusherUntil(
            () => gotA.length === 2 && gotB.length === 2,
            10_000,
            "both sockets got the events not excluding them",
          );
          assert.deepEqual([gotA, gotB], [[2, 3], [1, 3]]);
          const history = await call(nodes[2], "GET", "/api/apps/app-1/channels/excluding/history");
          assert.deepEqual(
            history.body.items.map((i: Record<string, unknown>) => Object.keys(i).sort()),
            [
              ["data", "event", "published_at", "serial"],
              ["data", "event", "published_at", "serial"],
              ["data", "event", "published_at", "serial"],
            ],
            "the exclusion is not listed",
          );
        },
      );

      await t.step("ephemeral events and user events are relayed to the other nodes", async () => {
        const topic = "pubsub:key1:ephemeral-pings";
        const s = await connect(nodes[2]);
        await s.join(topic, {});
        const r = await call(nodes[0], "POST", "/api/apps/app-1/trigger", {
          channel: "ephemeral-pings",
          event: "ping",
          data: 1,
        });
        assert.equal(r.status, 200);
        const f = await s.waitFor((f) => f[2] === topic && f[3] === "ping");
        assert.deepEqual(f[4], { serial: null, data: 1 });
      });

      await t.step("the same user on two nodes is one presence member on every node", async () => {
        const topic = "pubsub:key1:presence-lobby";
        const sdk = sdkFor(nodes[0]);
        const enter = async (node: TestServer, userId: string) => {
          const s = await connect(node);
          const { auth, channel_data } = await sdk.authenticate(s.socketId, "presence-lobby", {
            user_id: userId,
          });
          const r = await s.join(topic, { auth, channel_data });
          assert.equal(r.status, "ok");
          return s;
        };
        const observer = await enter(nodes[2], "observer");
        await enter(nodes[0], "ana");
        await observer.waitFor((f) =>
          f[2] === topic && f[3] === "presence:join" && f[4].user_id === "ana"
        );
        await enter(nodes[1], "ana");
        for (const node of nodes) {
          await eventually("two members everywhere", async () => {
            const users = await call(node, "GET", "/api/apps/app-1/channels/presence-lobby/users");
            return users.body.count === 2;
          });
        }
        const users = await call(nodes[1], "GET", "/api/apps/app-1/channels/presence-lobby/users");
        assert.deepEqual(users.body.users.map((u: { user_id: string }) => u.user_id).sort(), [
          "ana",
          "observer",
        ]);
        await new Promise((r) => setTimeout(r, 700));
        assert.equal(
          observer.events(topic, "presence:join").filter((f) => f[4].user_id === "ana").length,
          1,
          "one join for ana",
        );
      });

      await t.step(
        "occupancy is cluster-wide: listings, counts, and each webhook sent once",
        async () => {
          const webhookEvents = () =>
            hook.got.flatMap((d) =>
              JSON.parse(d.body).events as { name: string; channel: string; user_id?: string }[]
            )
              .filter((e) => e.channel.endsWith("-hooked") || e.channel === "hooked")
              .map((e) => `${e.name}${e.user_id ? `:${e.user_id}` : ""}`);
          const sdk = sdkFor(nodes[0]);
          const [s1, s2, s3] = await Promise.all(nodes.map(connect));
          assert.equal((await s1.join("pubsub:key1:hooked", {})).status, "ok");
          assert.equal((await s2.join("pubsub:key1:hooked", {})).status, "ok");
          const enter = async (s: RawSocket) => {
            const { auth, channel_data } = await sdk.authenticate(s.socketId, "presence-hooked", {
              user_id: "una",
            });
            assert.equal(
              (await s.join("pubsub:key1:presence-hooked", { auth, channel_data })).status,
              "ok",
            );
          };
          await enter(s1);
          await enter(s2);
          await eventually(
            "node 3 lists both channels, with 2 subscriptions on hooked",
            async () => {
              const r = await call(
                nodes[2],
                "GET",
                "/api/apps/app-1/channels?info=subscription_count",
              );
              return r.body.channels?.hooked?.subscription_count === 2 &&
                r.body.channels["presence-hooked"] !== undefined;
            },
          );
          const one = await call(nodes[2], "GET", "/api/apps/app-1/channels/hooked");
          assert.equal(one.body.occupied, true);
          assert.equal(one.body.subscription_count, 2);
          // The first node leaves: still occupied (the second holds it); then the second leaves.
          await s1.close();
          await new Promise((r) => setTimeout(r, 400));
          assert.equal(
            (await call(nodes[2], "GET", "/api/apps/app-1/channels/hooked")).body
              .subscription_count,
            1,
          );
          await s2.close();
          await eventually("vacated everywhere", async () => {
            const r = await call(nodes[2], "GET", "/api/apps/app-1/channels");
            return r.body.channels?.hooked === undefined &&
              r.body.channels?.["presence-hooked"] === undefined;
          });
          await eventually("webhooks", () => Promise.resolve(webhookEvents().length >= 6));
          await new Promise((r) => setTimeout(r, 700)); // a duplicate from another node would be here by now
          assert.deepEqual(webhookEvents().sort(), [
            "channel_occupied",
            "channel_occupied",
            "channel_vacated",
            "channel_vacated",
            "member_added:una",
            "member_removed:una",
          ]);
          await s3.close();
        },
      );

      await t.step("spaces: members and pushes cross nodes", async () => {
        const topic = "spaces:key1:board";
        const a = await connect(nodes[0]);
        await a.join(topic, { client_id: "a", data: { c: "red" } });
        const b = await connect(nodes[1]);
        await eventually("node 2 lists the member on node 1", async () => {
          const probe = await connect(nodes[1]);
          const j = await probe.join(topic, { client_id: "probe" });
          await probe.close();
          return (j.response.members as unknown[]).some((m) =>
            (m as { client_id: string }).client_id === "a"
          );
        });
        const jb = await b.join(topic, { client_id: "b" });
        assert.ok(
          (jb.response.members as { socket_id: string }[]).some((m) => m.socket_id === a.socketId),
        );
        await a.waitFor((f) => f[2] === topic && f[3] === "member:enter" && f[4].client_id === "b");
        await b.push(topic, jb.joinRef, "cursor", { x: 1 });
        const moved = await a.waitFor((f) => f[2] === topic && f[3] === "cursor");
        assert.deepEqual(moved[4], { x: 1 });
        await b.close();
        const left = await a.waitFor((f) =>
          f[2] === topic && f[3] === "member:leave" && f[4].client_id === "b"
        );
        assert.deepEqual(left[4], { socket_id: b.socketId, client_id: "b", data: null });
      });

      await t.step(
        "writers on 12 objects from every node: each object's counter = its acknowledged increments",
        async () => {
          const acked = new Map<string, number[]>();
          await Promise.all(
            range(0, 11).map(async (w) => {
              for (let i = 0; i < 25; i++) {
                const key = `k${(w * 7 + i) % 12}`;
                const id = await increment(nodes[w % 3], "spread", key);
                assert.ok(id !== null);
                acked.set(key, [...(acked.get(key) ?? []), id]);
              }
            }),
          );
          for (const [key, ids] of acked) {
            assert.deepEqual(
              [...ids].sort((a, b) => a - b),
              range(1, ids.length),
              `${key}: positions 1..N`,
            );
            for (const node of nodes) {
              await eventually(
                `${key} converged`,
                async () =>
                  (await call(node, "GET", objectPath("spread", key))).body.log_id === ids.length,
              );
              const r = await call(node, "GET", objectPath("spread", key));
              assert.deepEqual(r.body.state, { n: ids.length });
            }
          }
        },
      );

      await t.step(
        "chat: a thread made on node 1, messages posted on node 2, read on node 3",
        async () => {
          const created = await api(
            nodes[0],
            "POST",
            "/api/chat/threads",
            doc("threads", { title: "café" }, { id: "café" }),
          );
          assert.equal(created.status, 201);
          // Posted at once from all three nodes, which may not have applied the thread yet (a
          // write that finds no thread is judged again against the log's tail): every one lands,
          // none twice.
          const ids = range(0, 11).map((i) => `m${String(i).padStart(2, "0")}`);
          await Promise.all(ids.map(async (id, i) => {
            const m = await api(
              nodes[i % 3],
              "POST",
              "/api/chat/threads/caf%C3%A9/messages",
              doc("messages", { role: "user", content: id }, { id }),
            );
            assert.equal(m.status, 201, JSON.stringify(m.body));
          }));
          await eventually("messages on node 3", async () => {
            const list = await api(
              nodes[2],
              "GET",
              "/api/chat/threads/caf%C3%A9/messages?page[size]=50",
            );
            return list.body?.data?.length === ids.length;
          });
          const list = await api(
            nodes[2],
            "GET",
            "/api/chat/threads/caf%C3%A9/messages?page[size]=50",
          );
          assert.deepEqual(list.body.data.map((m: { id: string }) => m.id).sort(), ids);
        },
      );

      await t.step(
        "chat live: agent on node 1, human on node 2, a viewer joining mid-run on node 3",
        async () => {
          const bot = client(nodes[0]);
          const human = client(nodes[1]);
          const late = client(nodes[2]);
          try {
            const agent = await bot.connectAgent("live", { secret: "secret1", agentId: "echo" });
            const session = await human.connect("live", { clientId: "alice" });
            let release!: () => void;
            const halfway = new Promise<void>((r) => (release = r));
            let resume!: () => void;
            const goOn = new Promise<void>((r) => (resume = r));
            agent.on("run:pending", async (run) => {
              await agent.startRun(run.runId);
              for (let i = 0; i < 10; i++) agent.token(run.runId, `a${i} `);
              await new Promise((r) => setTimeout(r, 150));
              release();
              await goOn;
              for (let i = 0; i < 10; i++) agent.token(run.runId, `b${i} `);
              await new Promise((r) => setTimeout(r, 100));
              await agent.end(run.runId, "complete");
            });
            const active = await session.view.send("hello");
            await halfway;
            const first = Array.from({ length: 10 }, (_, i) => `a${i} `).join("");
            // The roll-ups went out (node 2 shows them; node 3 got the same relay).
            await until(
              () => session.view.getStream(active.runId) === first,
              "first half on node 2",
              10_000,
            );
            // Node 3 (which loses log deliveries) has applied the run's start: join there.
            const position = async (n: TestServer) => {
              const text = await (await fetch(`${n.baseUrl}/metrics`)).text();
              return Number(text.match(/switchboard_cluster_applied_position\{[^}]*\} (\d+)/)![1]);
            };
            const target = await position(nodes[0]);
            await eventually("node 3 caught up", async () => (await position(nodes[2])) >= target);
            const viewer = await late.connect("live", { clientId: "bob" });
            assert.equal(
              viewer.view.getStream(active.runId),
              first,
              "the joiner gets the text streamed so far",
            );
            resume();
            const full = first + Array.from({ length: 10 }, (_, i) => `b${i} `).join("");
            for (const s of [session, viewer]) {
              await until(
                () => s.view.run(active.runId)?.status === "complete",
                "run complete",
                10_000,
              );
              const msgs = s.view.getMessages();
              assert.deepEqual(msgs.map((m) => m.content), ["hello", full]);
            }
          } finally {
            bot.disconnect();
            human.disconnect();
            late.disconnect();
          }
        },
      );
    } finally {
      for (const p of pushers) p.disconnect();
      await Promise.all(sockets.map((s) => s.close().catch(() => {})));
      await cluster.stop();
      await hook.close();
    }
  },
});
