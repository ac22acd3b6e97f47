// Pusher webhooks under faults (issue 34 points 1-3, issue 38 point 2): one event per request
// unless the app batches; a hanging receiver of one app does not hold up another app's
// webhooks; the outbox is bounded per app; a SIGKILL loses no client_event webhook and the
// restart reports member_removed / channel_vacated for what died; subscribe churn is bounded.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer, type TestApp } from "../helpers/server.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { token } from "../pubsub/helpers.ts";
import { type Message, RawPusher, serverLib, until } from "../pusher/helpers.ts";
import { WEBHOOK_EVENT_TYPES } from "../../lib/config/apps.ts";

type Event = { name: string; channel: string; [k: string]: unknown };
/** Every webhook event type but cache_miss (no cache channels here). */
const ALL = WEBHOOK_EVENT_TYPES.filter((t) => t !== "cache_miss");

/** Every event of every body received (bodies repeated by retries counted once). */
function eventsOf(got: { body: string }[]): Event[] {
  return [...new Set(got.map((d) => d.body))].flatMap((b) => JSON.parse(b).events as Event[]);
}

/** A receiver whose answers can be switched: 503 while `up` is false. */
function switchable() {
  const got: { body: string; headers: Headers }[] = [];
  const state = { up: false };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const body = await req.text();
    if (!state.up) return new Response(null, { status: 503 });
    got.push({ body, headers: req.headers });
    return new Response(null, { status: 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    got,
    state,
    close: () => server.shutdown(),
  };
}

async function metric(baseUrl: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const m = text.match(line);
  return m ? Number(m[1]) : NaN;
}

Deno.test("Pusher webhooks: one event per request by default; webhook_batching sends events staged together in one request", async () => {
  const plain = receiver();
  const batched = receiver();
  const apps: (TestApp & { webhook_batching?: boolean })[] = [
    {
      id: "app-1",
      key: "key1",
      secret: "secret1",
      webhooks: [{ url: plain.url, event_types: ALL }],
    },
    {
      id: "app-2",
      key: "key2",
      secret: "secret2",
      webhooks: [{ url: batched.url, event_types: ALL }],
      webhook_batching: true,
    },
  ];
  const server = await startServer({ apps });
  try {
    for (const app of apps) {
      const sock = await RawSocket.connect(server.wsUrl(app.key));
      const tok = await token(server, app, sock.socketId, [
        "channel:subscribe:presence-r",
        "channel:presence:presence-r",
      ], "ann");
      assert.equal(
        (await sock.join(`pubsub:${app.key}:presence-r`, {
          auth: tok,
          channel_data: { user_id: "ann" },
        })).status,
        "ok",
      );
      await sock.close();
    }
    for (const hook of [plain, batched]) {
      await until(() => eventsOf(hook.got).length >= 4, 8000, "4 events");
    }
    const lib = serverLib(server);
    for (const d of plain.got) {
      assert.equal(
        JSON.parse(d.body).events.length,
        1,
        "one event per request, as Pusher sends by default",
      );
      assert.ok(lib.webhook({ headers: Object.fromEntries(d.headers), rawBody: d.body }).isValid());
    }
    assert.deepEqual(eventsOf(plain.got).map((e) => e.name).sort(), [
      "channel_occupied",
      "channel_vacated",
      "member_added",
      "member_removed",
    ]);
    // The join's member_added and channel_occupied are staged together: one request.
    assert.ok(
      batched.got.some((d) => JSON.parse(d.body).events.length > 1),
      "batched app: several events in one request",
    );
    assert.deepEqual(eventsOf(batched.got).map((e) => e.name).sort(), [
      "channel_occupied",
      "channel_vacated",
      "member_added",
      "member_removed",
    ]);
  } finally {
    await server.stop();
    await plain.close();
    await batched.close();
  }
});

Deno.test("Pusher webhooks: a hanging receiver of one app does not hold up another app's webhooks", async () => {
  // App A's receiver takes every request and never answers (until the test ends).
  const hanging: (() => void)[] = [];
  let aRequests = 0;
  const a = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    aRequests++;
    return new Promise<Response>((resolve) =>
      hanging.push(() => resolve(new Response(null, { status: 200 })))
    );
  });
  const b = receiver();
  const apps: TestApp[] = [
    {
      id: "app-a",
      key: "keya",
      secret: "secreta",
      webhooks: [{
        url: `http://127.0.0.1:${a.addr.port}/hook`,
        event_types: ["channel_occupied"],
      }],
    },
    {
      id: "app-b",
      key: "keyb",
      secret: "secretb",
      webhooks: [{ url: b.url, event_types: ["channel_occupied"] }],
    },
  ];
  const server = await startServer({ apps });
  const socks: RawPusher[] = [];
  try {
    const sa = await RawPusher.connect(server, "keya");
    socks.push(sa);
    for (let i = 0; i < 20; i++) sa.send("pusher:subscribe", { channel: `a-${i}` });
    await until(() => aRequests >= 4, 8000, "A's receiver to hold requests");
    const sb = await RawPusher.connect(server, "keyb");
    socks.push(sb);
    for (let i = 0; i < 10; i++) sb.send("pusher:subscribe", { channel: `b-${i}` });
    await until(() => eventsOf(b.got).length >= 10, 8000, "B's 10 webhooks");
    // All of B's arrived while every request to A was still unanswered.
    assert.equal(hanging.length, aRequests);
    assert.ok(
      aRequests >= 4 && aRequests < 20,
      `A's lane holds a bounded number of attempts (${aRequests})`,
    );
    assert.deepEqual(
      eventsOf(b.got).map((e) => e.channel).sort(),
      Array.from({ length: 10 }, (_, i) => `b-${i}`).sort(),
    );
  } finally {
    for (const s of socks) s.close();
    await server.stop();
    for (const release of hanging) release();
    await a.shutdown();
    await b.close();
  }
});

Deno.test("Pusher webhooks: an app's outbox is bounded; the oldest deliveries are dropped and counted", async () => {
  const hook = receiver(Array.from({ length: 1000 }, () => 500)); // always failing
  const apps: TestApp[] = [{
    id: "app-1",
    key: "key1",
    secret: "secret1",
    webhooks: [{ url: hook.url, event_types: ["channel_occupied", "channel_vacated"] }],
  }];
  const server = await startServer({ apps, env: { SWITCHBOARD_WEBHOOK_OUTBOX_MAX_COUNT: "10" } });
  try {
    const sock = await RawPusher.connect(server, "key1");
    for (let i = 0; i < 30; i++) {
      sock.send("pusher:subscribe", { channel: `c-${i}` });
      await sock.waitFor((m) =>
        m.event === "pusher_internal:subscription_succeeded" && m.channel === `c-${i}`
      );
      sock.send("pusher:unsubscribe", { channel: `c-${i}` });
    }
    sock.close();
    const depth = /switchboard_webhook_outbox_depth\{kind="pusher"\} (\d+)/;
    const dropped = /switchboard_webhook_dropped_total\{kind="pusher"\} (\d+)/;
    // 60 deliveries staged, at most 10 kept: at least 50 dropped.
    const retried = /switchboard_webhook_deliveries_total\{kind="pusher",result="retried"\} (\d+)/;
    for (
      let i = 0;
      i < 400 &&
      !(await metric(server.baseUrl, dropped) >= 50 && await metric(server.baseUrl, retried) >= 1);
      i++
    ) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(await metric(server.baseUrl, dropped) >= 50);
    assert.ok(await metric(server.baseUrl, depth) <= 10);
    assert.ok(
      await metric(
        server.baseUrl,
        /switchboard_webhook_outbox_oldest_age_seconds\{kind="pusher"\} ([\d.e-]+)/,
      ) >= 0,
    );
    assert.ok(await metric(server.baseUrl, retried) >= 1);
  } finally {
    await server.stop();
    await hook.close();
  }
});

Deno.test("Pusher webhooks: a SIGKILL loses no client_event webhook; the restart reports what died, both protocols", async () => {
  const hook = switchable(); // down (503) until the restart
  const apps: TestApp[] = [{
    id: "app-1",
    key: "key1",
    secret: "secret1",
    enable_client_messages: true,
    webhooks: [{ url: hook.url, event_types: ALL }],
  }];
  const first = await startServer({ apps });
  const lib = serverLib(first);
  try {
    const sender = await RawPusher.connect(first, "key1");
    const listener = await RawPusher.connect(first, "key1");
    for (const [sock, user] of [[sender, "alice"], [listener, "bob"]] as const) {
      const data = JSON.stringify({ user_id: user });
      const auth = lib.authorizeChannel(sock.socketId, "presence-room", { user_id: user });
      sock.send("pusher:subscribe", {
        channel: "presence-room",
        auth: auth.auth,
        channel_data: data,
      });
      await sock.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
    }
    const phoenix = await RawSocket.connect(first.wsUrl("key1"));
    const tok = await token(first, apps[0], phoenix.socketId, [
      "channel:subscribe:presence-ph",
      "channel:presence:presence-ph",
    ], "carol");
    assert.equal(
      (await phoenix.join("pubsub:key1:presence-ph", {
        auth: tok,
        channel_data: { user_id: "carol" },
      })).status,
      "ok",
    );
    assert.equal((await phoenix.join("pubsub:key1:news", {})).status, "ok");
    const N = 20;
    for (let i = 0; i < N; i++) sender.send("client-n", { i }, "presence-room");
    const isN = (m: Message) => m.event === "client-n";
    await until(
      () => listener.messages.filter(isN).length === N,
      8000,
      "the listener to get every client event",
    );
    // A last join, killed the moment it succeeded: its member_added and channel_occupied were
    // stored before the client saw it.
    const late = await RawPusher.connect(first, "key1");
    const lateAuth = lib.authorizeChannel(late.socketId, "presence-late", { user_id: "dave" });
    late.send("pusher:subscribe", {
      channel: "presence-late",
      auth: lateAuth.auth,
      channel_data: JSON.stringify({ user_id: "dave" }),
    });
    await late.waitFor((m) => m.event === "pusher_internal:subscription_succeeded", 8000);
    await first.kill();
    hook.state.up = true;
    const second = await startServer({ apps, dataDir: first.dataDir });
    try {
      const want = (e: Event[]) =>
        e.filter((x) => x.name === "client_event").length >= N &&
        e.filter((x) => x.name === "member_removed").length >= 4 &&
        e.filter((x) => x.name === "channel_vacated").length >= 4;
      await until(
        () => want(eventsOf(hook.got)),
        20_000,
        "every client_event and the restart's leaves",
      );
      const events = eventsOf(hook.got);
      const client = events.filter((e) => e.name === "client_event").map((e) =>
        JSON.parse(e.data as string).i
      );
      assert.deepEqual(
        [...new Set(client)].sort((x, y) => x - y),
        Array.from({ length: N }, (_, i) => i),
      );
      const removed = events.filter((e) => e.name === "member_removed").map((e) =>
        `${e.channel}:${e.user_id}`
      );
      assert.deepEqual([...new Set(removed)].sort(), [
        "presence-late:dave",
        "presence-ph:carol",
        "presence-room:alice",
        "presence-room:bob",
      ]);
      const vacated = events.filter((e) => e.name === "channel_vacated").map((e) => e.channel);
      assert.deepEqual([...new Set(vacated)].sort(), [
        "news",
        "presence-late",
        "presence-ph",
        "presence-room",
      ]);
      assert.ok(
        events.some((e) => e.name === "member_added" && e.user_id === "dave"),
        "the last join's member_added",
      );
      assert.ok(
        events.some((e) => e.name === "channel_occupied" && e.channel === "presence-late"),
        "the last join's channel_occupied",
      );
      for (const d of hook.got) {
        assert.ok(
          lib.webhook({ headers: Object.fromEntries(d.headers), rawBody: d.body }).isValid(),
        );
      }
    } finally {
      await second.stop();
    }
  } finally {
    await first.stop().catch(() => {});
    await hook.close();
  }
});

Deno.test("subscribe churn: a socket over its join/leave rate is refused (Pusher subscription_error 429, Phoenix join error)", async () => {
  const server = await startServer();
  try {
    const pusher = await RawPusher.connect(server, "key1");
    for (let i = 0; i < 150; i++) pusher.send("pusher:subscribe", { channel: `p-${i}` });
    const refused = await pusher.waitFor((m) => m.event === "pusher:subscription_error");
    assert.equal(JSON.parse(refused.data as string).status, 429);
    assert.equal(JSON.parse(refused.data as string).type, "LimitReached");
    pusher.close();

    const phoenix = await RawSocket.connect(server.wsUrl("key1"));
    for (let i = 0; i < 150; i++) {
      phoenix.send(String(i), `pubsub:key1:x-${i}`, "phx_join", {}, String(i));
    }
    const error = await phoenix.waitFor((f) =>
      f[3] === "phx_reply" && (f[4] as { status: string }).status === "error"
    );
    assert.match(
      String((error[4] as { response: { reason: string } }).response.reason),
      /^Rate limit exceeded: /,
    );
    // The refusal leaves the socket open: a join after the bucket refilled succeeds.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await phoenix.join("pubsub:key1:later", {})).status, "ok");
    await phoenix.close();
  } finally {
    await server.stop();
  }
});

Deno.test("webhook metrics: outbox depth, bytes and oldest age of both kinds from the first scrape", async () => {
  const server = await startServer();
  try {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    for (const kind of ["pusher", "bot"]) {
      assert.match(text, new RegExp(`switchboard_webhook_outbox_depth\\{kind="${kind}"\\} 0\\n`));
      assert.match(text, new RegExp(`switchboard_webhook_outbox_bytes\\{kind="${kind}"\\} 0\\n`));
      assert.match(
        text,
        new RegExp(`switchboard_webhook_outbox_oldest_age_seconds\\{kind="${kind}"\\} 0\\n`),
      );
      assert.match(text, new RegExp(`switchboard_webhook_dropped_total\\{kind="${kind}"\\} 0\\n`));
      assert.match(
        text,
        new RegExp(
          `switchboard_webhook_deliveries_total\\{kind="${kind}",result="delivered"\\} 0\\n`,
        ),
      );
    }
  } finally {
    await server.stop();
  }
});
