// The console's live stream and browse views against a real server: connections, joins
// (with the refusal reason), a trigger made by the official `pusher` library, client events,
// presence, API calls and failing webhook deliveries in the stream; channels, an object's log
// and earlier state, chat threads, the webhook outbox (last error, retry now) and charts.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { ChatClient } from "../../sdk/client/chat_client.ts";
import type { TestServer } from "../helpers/in_process.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { client, serverLib } from "../pusher/helpers.ts";
import { ADMIN_SECRET, call, CONSOLE_APPS, login, startConsole, until } from "./helpers.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** An open live stream: the entries received so far. */
async function openLive(server: TestServer, cookie: string, appId: string) {
  const abort = new AbortController();
  const res = await fetch(`${server.baseUrl}/console/api/apps/${appId}/live`, {
    headers: { cookie },
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
  const entries: Record<string, unknown>[] = [];
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for await (const chunk of res.body!) {
        buf += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (block.includes("event: ready")) ready();
          const data = block.split("\n").find((l) => l.startsWith("data: "));
          if (data && !block.includes("event: ready")) entries.push(JSON.parse(data.slice(6)));
        }
      }
    } catch { /* aborted */ }
  })();
  await isReady;
  return {
    entries,
    find: (pred: (e: Record<string, unknown>) => boolean, what: string) =>
      until(() => Promise.resolve(entries.find(pred)), (e) => e !== undefined, what) as Promise<
        Record<string, unknown>
      >,
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}

Deno.test({
  ...opts,
  name:
    "console live: connections, joins with refusal reasons, a pusher trigger, client events, presence and API calls",
  fn: async () => {
    const server = await startConsole();
    const sockets: RawSocket[] = [];
    let pusher: ReturnType<typeof client> | undefined;
    try {
      const cookie = await login(server, CONSOLE_APPS[0].secret);
      const live = await openLive(server, cookie, "app-1");
      try {
        const sock = await RawSocket.connect(server.wsUrl("key1"));
        sockets.push(sock);
        await live.find(
          (e) =>
            e.kind === "connection" && e.what === "opened" && e.socket_id === sock.socketId &&
            e.protocol === "phoenix",
          "connection opened",
        );

        const ok = await sock.join("pubsub:key1:room");
        assert.equal(ok.status, "ok");
        await live.find(
          (e) => e.kind === "join" && e.channel === "room" && e.outcome === "ok",
          "join ok",
        );
        const refused = await sock.join("pubsub:key1:private-vault");
        assert.equal(refused.status, "error");
        const entry = await live.find(
          (e) => e.kind === "join" && e.channel === "private-vault",
          "join refused",
        );
        assert.equal(entry.outcome, "refused");
        assert.equal(entry.reason, refused.response.reason);

        // A trigger through the official server library (Pusher REST): the event with its
        // serial and payload preview, and the API call with its status.
        await serverLib(server, CONSOLE_APPS[0]).trigger("room", "greeting", {
          hello: "from the test",
        });
        const ev = await live.find(
          (e) => e.kind === "event" && e.event === "greeting",
          "triggered event",
        );
        assert.equal(ev.channel, "room");
        assert.equal(typeof ev.serial, "number");
        assert.match(String(ev.payload), /from the test/);
        assert.equal(ev.subscribers, 1);
        const apiCall = await live.find(
          (e) => e.kind === "api" && String(e.path).endsWith("/events"),
          "api call",
        );
        assert.equal(apiCall.status, 200);

        // A Pusher client: its connection, a presence join (presence change) and a client event.
        pusher = client(server, { user_id: "ada" }, CONSOLE_APPS[0]);
        const ch = pusher.subscribe("presence-lobby");
        await new Promise<void>((r) => ch.bind("pusher:subscription_succeeded", () => r()));
        await live.find(
          (e) => e.kind === "connection" && e.protocol === "pusher" && e.what === "opened",
          "pusher connection",
        );
        await live.find(
          (e) => e.kind === "join" && e.channel === "presence-lobby" && e.outcome === "ok",
          "pusher join",
        );
        await live.find(
          (e) => e.kind === "presence" && e.channel === "presence-lobby",
          "presence change",
        );
        pusher.subscribe("bad channel name");
        const badJoin = await live.find(
          (e) => e.kind === "join" && e.channel === "bad channel name",
          "pusher join refused",
        );
        assert.equal(badJoin.outcome, "refused");
        assert.match(String(badJoin.reason), /Invalid channel name/);
        ch.trigger("client-typing", { who: "ada" });
        const ce = await live.find(
          (e) => e.kind === "client" && e.event === "client-typing",
          "client event",
        );
        assert.match(String(ce.payload), /ada/);

        sock.close();
        await live.find(
          (e) => e.kind === "connection" && e.what === "closed" && e.socket_id === sock.socketId,
          "connection closed",
        );
        // Nothing of another app reaches this app's stream.
        assert.ok(live.entries.every((e) => !String(e.channel ?? "").includes("key2")));
      } finally {
        await live.close();
      }
    } finally {
      pusher?.disconnect();
      for (const s of sockets) s.close();
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console browse: channels, an object's log and earlier state, threads, a failing webhook's last error and retry now, charts",
  fn: async () => {
    // The receiver fails the first 5 attempts: after the 5th the next is 30 s away.
    const hook = receiver([503, 503, 503, 503, 503]);
    const apps = [CONSOLE_APPS[0], {
      ...CONSOLE_APPS[1],
      webhooks: [{ url: hook.url, event_types: ["channel_occupied"] }],
    }];
    const server = await startConsole({ apps });
    const sockets: RawSocket[] = [];
    try {
      const admin = await login(server, ADMIN_SECRET);
      const get = (path: string) => call(server, path, { cookie: admin });

      // Channels: the occupied channel with its subscriber and serial, its history tail.
      const sock = await RawSocket.connect(server.wsUrl("key1"));
      sockets.push(sock);
      await sock.join("pubsub:key1:room");
      await serverLib(server, apps[0]).trigger("room", "greeting", { n: 1 });
      const list = await until(
        () => get("/console/api/apps/app-1/channels"),
        (r) => (r.body.channels as unknown[]).length === 1,
        "channel list",
      );
      assert.deepEqual(list.body.channels, [{
        name: "room",
        subscribers: 1,
        members: null,
        serial: 1,
      }]);
      const room = await get("/console/api/apps/app-1/channels/room");
      assert.equal(room.body.occupied, true);
      assert.equal((room.body.history as { event: string }[])[0].event, "greeting");
      assert.equal((await get("/console/api/apps/app-1/channels/bad%20name")).status, 400);

      // Objects: the state at the head, the log with log_ids, the state at an earlier log_id.
      const base = `${server.baseUrl}/api/v1/objects/app-1/cart/42`;
      for (const [slot, value] of [["items", 1], ["items", 2], ["owner", "ada"]] as const) {
        const res = await fetch(`${base}/${slot}`, {
          method: "PUT",
          headers: server.headers(apps[0]),
          body: JSON.stringify({ value }),
        });
        assert.equal(res.status, 200);
      }
      const listed = await get("/console/api/apps/app-1/objects?type=ca");
      assert.deepEqual(listed.body.objects, [{ type: "cart", key: "42", log_id: 3 }]);
      assert.deepEqual((await get("/console/api/apps/app-1/objects?type=zz")).body.objects, []);
      assert.deepEqual((await get("/console/api/apps/app-2/objects")).body.objects, []);
      const obj = await get("/console/api/apps/app-1/objects?type=cart&key=42&at=1");
      assert.equal(obj.status, 200);
      assert.deepEqual(obj.body.state, { items: 2, owner: "ada" });
      assert.equal(obj.body.log_id, 3);
      assert.deepEqual((obj.body.log as { log_id: number }[]).map((i) => i.log_id), [1, 2, 3]);
      assert.deepEqual(obj.body.at, { log_id: 1, state: { items: 1 } });
      assert.equal(
        (await get("/console/api/apps/app-1/objects?type=cart&key=42&at=9")).status,
        400,
      );

      // Chat: a thread with a message.
      const chatHeaders = {
        ...server.headers(apps[0]),
        "content-type": "application/vnd.api+json",
      };
      const created = await fetch(`${server.baseUrl}/api/chat/threads`, {
        method: "POST",
        headers: chatHeaders,
        body: JSON.stringify({ data: { type: "threads", attributes: { title: "Help" } } }),
      });
      assert.equal(created.status, 201, await created.clone().text());
      const threadId = (await created.json()).data.id;
      const threads = await get("/console/api/apps/app-1/threads");
      assert.deepEqual(
        (threads.body.threads as { id: string; title: string }[]).map((t) => [t.id, t.title]),
        [[threadId, "Help"]],
      );
      const thread = await get(`/console/api/apps/app-1/threads/${threadId}`);
      assert.equal(thread.status, 200);
      assert.deepEqual(thread.body.runs, []);
      assert.equal((await get("/console/api/apps/app-1/threads/nope")).status, 404);

      // Webhooks: occupying a channel of app-2 makes a delivery that fails; its last error is
      // shown; once it waits 30 s for its next attempt, "retry now" sends it at once.
      const live2 = await openLive(server, admin, "app-2");
      const sock2 = await RawSocket.connect(server.wsUrl("key2"));
      sockets.push(sock2);
      await sock2.join("pubsub:key2:lobby");
      try {
        const first = await live2.find(
          (e) => e.kind === "webhook" && e.attempt === 1,
          "webhook attempt in the live stream",
        );
        assert.equal(first.url, hook.url);
        assert.equal(first.status, 503);
      } finally {
        await live2.close();
      }
      await hook.waitFor(5, 15_000);
      const view = await until(
        () => get("/console/api/apps/app-2/webhooks"),
        (r) => {
          const w =
            (r.body.webhooks as { last: { attempt: number } | null; next_due_at: number | null }[])[
              0
            ];
          // The 5th attempt's result, once the outbox has moved the delivery 30 s ahead.
          return w?.last?.attempt === 5 && (w.next_due_at ?? 0) > Date.now() + 10_000;
        },
        "5th failed attempt shown, the next one 30 s away",
      );
      const [wh] = view.body.webhooks as Record<string, unknown>[];
      assert.equal(wh.url, hook.url);
      assert.equal(wh.pending, 1);
      assert.equal((wh.last as { lastError: { status: number } }).lastError.status, 503);
      const retried = await call(server, "/console/api/apps/app-2/webhooks/retry", {
        method: "POST",
        body: {},
        cookie: admin,
      });
      assert.equal(retried.body.moved, 1);
      await hook.waitFor(6, 5_000);
      const after = await until(
        () => get("/console/api/apps/app-2/webhooks"),
        (r) => (r.body.webhooks as { pending: number }[])[0].pending === 0,
        "delivered after retry",
      );
      const [done] = after.body.webhooks as {
        last: { ok: boolean; status: number; lastError: { status: number } };
      }[];
      assert.equal(done.last.ok, true);
      assert.equal(done.last.lastError.status, 503, "the last error stays visible");

      // Charts: the app's and the node's series hold what just happened.
      const stats = (await get("/console/api/apps/app-1/stats")).body.series as Record<
        string,
        number[]
      >;
      const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
      // Published and delivered count broadcasts that reached subscribers (as /metrics does):
      // the trigger on "room"; the object writes and the thread had no subscriber.
      assert.equal(sum(stats.published), 1);
      assert.equal(sum(stats.delivered), 1);
      assert.equal(stats.connections[stats.connections.length - 1], 1);
      assert.ok(sum(stats.http_p99_ms) > 0);
      const app2 = (await get("/console/api/apps/app-2/stats")).body.series as Record<
        string,
        number[]
      >;
      assert.equal(sum(app2.webhooks_failed), 5);
      assert.equal(sum(app2.webhooks_ok), 1);
      assert.equal(
        (await get("/console/api/cluster/stats")).status,
        404,
        "no cluster view on one node",
      );
      assert.equal((await get("/console/api/session")).body.clustered, false);
      const node = (await get("/console/api/node/stats")).body.series as Record<string, number[]>;
      assert.ok(sum(node.published) >= 1, JSON.stringify(node));
      assert.equal(node.connections[node.connections.length - 1], 2);
      assert.ok(sum(node.webhooks_failed) >= 5);
    } finally {
      for (const s of sockets) s.close();
      await hook.close();
      await server.stop();
    }
  },
});

Deno.test({
  ...opts,
  name:
    "console threads: a run's status while it streams, its stream deltas live, complete with the text at the end",
  fn: async () => {
    const server = await startConsole();
    const endpoint = `ws://127.0.0.1:${server.port}/socket`;
    const human = new ChatClient("key1", { endpoint });
    const bot = new ChatClient("key1", { endpoint });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    try {
      const cookie = await login(server, CONSOLE_APPS[0].secret);
      const get = (path: string) => call(server, path, { cookie });
      const live = await openLive(server, cookie, "app-1");
      try {
        const thread = "support-1";
        const agent = await bot.connectAgent(thread, {
          secret: CONSOLE_APPS[0].secret,
          agentId: "echo",
        });
        const session = await human.connect(thread, { clientId: "alice" });
        agent.on("run:pending", async (run: { runId: string }) => {
          await agent.startRun(run.runId);
          await agent.token(run.runId, "Hello ");
          await agent.token(run.runId, "from the agent");
          await gate;
          await agent.end(run.runId, "complete");
        });
        const active = await session.view.send("hi");
        // The run's stream, live, while it streams; its status is active.
        const delta = await live.find(
          (e) => e.product === "chat" && e.channel === thread && e.event === "stream",
          "stream delta",
        );
        assert.match(String(delta.payload), new RegExp(active.runId));
        await live.find(
          (e) =>
            e.channel === thread && e.event === "stream" &&
            String(e.payload).includes("from the agent"),
          "second delta",
        );
        const during = await get(`/console/api/apps/app-1/threads/${thread}`);
        assert.deepEqual(
          (during.body.runs as { runId: string; status: string }[]).map((r) => [r.runId, r.status]),
          [[active.runId, "active"]],
        );
        release();
        const after = await until(
          () => get(`/console/api/apps/app-1/threads/${thread}`),
          (r) => (r.body.runs as { status: string }[])[0]?.status === "complete",
          "run complete",
        );
        const messages = after.body.messages as { role: string; content: string; status: string }[];
        assert.deepEqual(messages.map((m) => [m.role, m.content, m.status]), [
          ["user", "hi", "complete"],
          ["assistant", "Hello from the agent", "complete"],
        ]);
      } finally {
        release();
        await live.close();
      }
    } finally {
      human.disconnect();
      bot.disconnect();
      await server.stop();
    }
  },
});
