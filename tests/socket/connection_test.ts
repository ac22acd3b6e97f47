import assert from "node:assert/strict";
import { Connection, SLOW_CONSUMER, type Transport } from "../../lib/socket/connection.ts";
import { Hub } from "../../lib/hub/hub.ts";
import { configureLog } from "../../lib/log/mod.ts";
import type { ChannelHandler } from "../../lib/socket/handler.ts";
import type { App } from "../../lib/config/apps.ts";
import { APP_DEFAULTS } from "../../lib/config/apps.ts";
import { Topic } from "../../lib/wire/topic.ts";

/** The topic the tests join (the hub is asked about it as a parsed value). */
const ROOM = Topic.of("spaces", "k", "room");

const app: App = { id: "a", key: "k", secret: "s", ...APP_DEFAULTS };

class FakeTransport implements Transport {
  sent: unknown[] = [];
  closedWith?: [number, string];
  buffered = 0;
  send(data: string | Uint8Array) {
    this.sent.push(typeof data === "string" ? JSON.parse(data) : data);
  }
  close(code: number, reason: string) {
    this.closedWith = [code, reason];
  }
  bufferedAmount() {
    return this.buffered;
  }
}

/** A handler that records lifecycle calls and echoes pushes. */
function echoHandler(log: string[]): ChannelHandler {
  return {
    join(ctx) {
      if (ctx.params.refuse) return Promise.resolve({ error: "nope" });
      log.push(`join ${ctx.topic.name}`);
      ctx.subscribe();
      return Promise.resolve({
        handleIn: (event, payload) => ({ status: "ok", response: { event, payload } }),
        terminate: (why) => log.push(`terminate ${why}`),
      });
    },
  };
}

function setup() {
  const hub = new Hub();
  const log: string[] = [];
  const t = new FakeTransport();
  const conn = new Connection(app, "json", t, {
    hub,
    handlers: { spaces: echoHandler(log) },
    verify: () => Promise.resolve(null),
    maxBufferedBytes: 1000,
  });
  return { hub, log, t, conn };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("Connection sends the connected first frame with a socket id", () => {
  const { t, conn } = setup();
  assert.deepEqual(t.sent[0], [null, null, "phoenix", "connected", { socket_id: conn.socketId }]);
});

Deno.test("Connection joins, answers pushes with the join ref, and leaves", async () => {
  const { t, conn, log, hub } = setup();
  conn.receive(JSON.stringify(["1", "1", "spaces:k:room", "phx_join", {}]));
  await tick();
  assert.deepEqual(t.sent.at(-1), ["1", "1", "spaces:k:room", "phx_reply", {
    status: "ok",
    response: {},
  }]);
  assert.equal(hub.count(ROOM), 1);
  conn.receive(JSON.stringify(["1", "2", "spaces:k:room", "hello", { a: 1 }]));
  await tick();
  assert.deepEqual(t.sent.at(-1), ["1", "2", "spaces:k:room", "phx_reply", {
    status: "ok",
    response: { event: "hello", payload: { a: 1 } },
  }]);
  conn.receive(JSON.stringify(["1", "3", "spaces:k:room", "phx_leave", {}]));
  assert.deepEqual(t.sent.at(-1), ["1", "3", "spaces:k:room", "phx_reply", {
    status: "ok",
    response: {},
  }]);
  assert.equal(hub.count(ROOM), 0);
  assert.deepEqual(log, ["join room", "terminate leave"]);
});

Deno.test("Connection replaces an earlier join of the same topic on rejoin", async () => {
  const { t, conn, log, hub } = setup();
  conn.receive(JSON.stringify(["1", "1", "spaces:k:room", "phx_join", {}]));
  await tick();
  conn.receive(JSON.stringify(["5", "5", "spaces:k:room", "phx_join", {}]));
  await tick();
  assert.deepEqual(log, ["join room", "terminate rejoin", "join room"]);
  assert.ok(
    t.sent.some((f) =>
      JSON.stringify(f) === JSON.stringify(["1", null, "spaces:k:room", "phx_close", {}])
    ),
  );
  assert.equal(hub.count(ROOM), 1);
  // A push with the old join ref no longer matches.
  conn.receive(JSON.stringify(["1", "6", "spaces:k:room", "x", {}]));
  await tick();
  assert.deepEqual(t.sent.at(-1), ["1", "6", "spaces:k:room", "phx_reply", {
    status: "error",
    response: { reason: "unmatched topic" },
  }]);
});

Deno.test("Connection reports join errors from the topic parser and the handler", async () => {
  const { t, conn } = setup();
  const cases: [string, Record<string, unknown>, string][] = [
    ["spaces:other:room", {}, "app_key mismatch"],
    ["nope:k:room", {}, "invalid topic format"],
    ["spaces:k", {}, "invalid topic format"],
    ["durable:k:onlytype", {}, "invalid topic format"],
    ["pubsub:k:news", {}, "invalid topic format"], // no pubsub handler in this setup
    ["spaces:k:room", { refuse: true }, "nope"],
  ];
  for (const [i, [topic, params, reason]] of cases.entries()) {
    conn.receive(JSON.stringify([`${i}`, `${i}`, topic, "phx_join", params]));
    await tick();
    assert.deepEqual(t.sent.at(-1), [`${i}`, `${i}`, topic, "phx_reply", {
      status: "error",
      response: { reason },
    }], topic);
  }
});

Deno.test("Connection answers malformed frames with phx_error and keeps working", async () => {
  const { t, conn } = setup();
  const bad = [
    "not json",
    "[1,2,3]",
    JSON.stringify([null, null, 5, "x", {}]),
    JSON.stringify([null, null, "t", "e", [1]]),
    "x".repeat(1024 * 1024 + 1),
  ];
  for (const frame of bad) {
    conn.receive(frame);
    const last = t.sent.at(-1) as unknown[];
    assert.equal(last[3], "phx_error");
    assert.match((last[4] as { reason: string }).reason, /malformed frame|frame too large/);
  }
  conn.receive(JSON.stringify([null, "9", "phoenix", "heartbeat", {}]));
  await tick();
  assert.deepEqual(t.sent.at(-1), [null, "9", "phoenix", "phx_reply", {
    status: "ok",
    response: {},
  }]);
  assert.equal(conn.closed, false);
});

Deno.test("Connection disconnects a subscriber whose send buffer is over the limit", async () => {
  const { t, conn, hub } = setup();
  conn.receive(JSON.stringify(["1", "1", "spaces:k:room", "phx_join", {}]));
  await tick();
  hub.publish(ROOM, "e", { n: 1 });
  assert.deepEqual(t.sent.at(-1), [null, null, "spaces:k:room", "e", { n: 1 }]);
  t.buffered = 5000;
  hub.publish(ROOM, "e", { n: 2 });
  assert.deepEqual(t.closedWith, [SLOW_CONSUMER.code, SLOW_CONSUMER.reason]);
  assert.equal(hub.count(ROOM), 0);
});

Deno.test("Connection logs a crashed join with its topic cut short, and replies join crashed", async () => {
  const t = new FakeTransport();
  const conn = new Connection(app, "json", t, {
    hub: new Hub(),
    handlers: { spaces: { join: () => Promise.reject(new Error("boom")) } },
    verify: () => Promise.resolve(null),
    maxBufferedBytes: 1000,
  });
  const logged: string[] = [];
  configureLog("info", "json", (line) => logged.push(line));
  try {
    const topic = `spaces:k:${"x".repeat(500_000)}`;
    conn.receive(JSON.stringify(["1", "1", topic, "phx_join", {}]));
    await tick();
    await tick();
  } finally {
    configureLog("info", "json");
  }
  assert.deepEqual((t.sent.at(-1) as unknown[])[4], {
    status: "error",
    response: { reason: "join crashed" },
  });
  const crashed = logged.map((l) => JSON.parse(l)).filter((e) => e.msg === "join crashed");
  assert.equal(crashed.length, 1);
  assert.ok(
    logged.every((l) => l.length < 2000),
    `logged ${Math.max(...logged.map((l) => l.length))} characters`,
  );
  assert.match(crashed[0].topic, /\(500009 chars\)$/);
});
