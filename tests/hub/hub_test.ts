import assert from "node:assert/strict";
import { Packr } from "msgpackr";
import { Hub, type Subscriber } from "../../lib/hub/hub.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { Topic } from "../../lib/wire/topic.ts";
import { tempStore } from "../helpers/temp_store.ts";

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
/** A topic; `T.parse` of its key gives an equal but distinct value (as two sockets would). */
const T = Topic.of("pubsub", "k", "t");

/** A subscriber that decodes and records every frame. */
let socketCounter = 0;
class Recorder implements Subscriber {
  frames: unknown[][] = [];
  raw: (string | Uint8Array)[] = [];
  readonly socketId = `r.${++socketCounter}`;
  constructor(readonly format: string = "json") {}
  sendEncoded(data: string | Uint8Array) {
    this.raw.push(data);
    this.frames.push(
      typeof data === "string" ? JSON.parse(data) : packr.unpack(data as Uint8Array),
    );
  }
}

Deno.test("Hub.publish() encodes once per format and reaches every subscriber but the excluded one", () => {
  const hub = new Hub();
  const [a, b, c, m] = [new Recorder(), new Recorder(), new Recorder(), new Recorder("msgpack")];
  for (const s of [a, b, c, m]) {
    hub.attach(s);
    hub.subscribe(Topic.parse(T.key)!, s); // topics are matched by address, not by identity
  }
  assert.equal(hub.publish(T, "ev", { x: 1 }, c.socketId), 3);
  assert.deepEqual(a.frames, [[null, null, "pubsub:k:t", "ev", { x: 1 }]]);
  assert.equal(a.raw[0], b.raw[0]);
  assert.deepEqual(m.frames, [[null, null, "pubsub:k:t", "ev", { x: 1 }]]);
  assert.equal(c.frames.length, 0);
  hub.unsubscribe(T, a);
  assert.equal(hub.count(T), 3);
  assert.deepEqual(hub.topics("pubsub").map((t) => t.key), ["pubsub:k:t"]);
  assert.deepEqual(hub.topics("pubsub", "k").map((t) => t.key), ["pubsub:k:t"]);
  assert.deepEqual(hub.topics("pubsub", "other"), []);
  assert.deepEqual(hub.topics("chat"), []);
});

Deno.test("Hub + OrderedLog: concurrent publishers and joins with replay see each stream exactly once, in order", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const hub = new Hub();
  const streams = ["s1", "s2", "s3"];
  const topicOf = (stream: string) => Topic.of("pubsub", "k", stream);
  const seen = new Map<Recorder, { stream: string; positions: number[] }>();

  // The join procedure products use: snapshot at N, then in the turn N is published, replay
  // from `after`, reply and subscribe.
  const join = (stream: string, after: number) => {
    const sub = new Recorder();
    const record = { stream, positions: [] as number[] };
    seen.set(sub, record);
    const n = log.head(stream);
    log.whenPublished(stream, n, () => {
      for (const r of log.after(stream, after)) {
        if (r.position <= n) record.positions.push(r.position);
      }
      hub.subscribe(topicOf(stream), {
        socketId: `j.${++socketCounter}`,
        format: "json",
        sendEncoded: (d) =>
          record.positions.push((JSON.parse(d as string)[4] as { pos: number }).pos),
      });
    });
  };

  const writers = streams.flatMap((stream) =>
    Array.from(
      { length: 150 },
      () =>
        log.append(stream, () => ({ entries: [0], result: 0 }), (pos) =>
          hub.publish(topicOf(stream), "e", { pos })),
    )
  );
  const joiners: Promise<void>[] = [];
  for (let i = 0; i < 30; i++) {
    joiners.push(
      new Promise((r) => setTimeout(r, i)).then(() =>
        join(streams[i % 3], i % 2 ? 0 : Math.max(0, log.head(streams[i % 3]) - 3))
      ),
    );
  }
  await Promise.all([...writers, ...joiners]);
  for (const { stream, positions } of seen.values()) {
    const start = positions[0] ?? 1;
    assert.deepEqual(
      positions,
      Array.from({ length: 150 - start + 1 }, (_, i) => start + i),
      `subscriber of ${stream}`,
    );
  }
  await env.close();
});

Deno.test("Hub: an added format gets its own encoding (null skips), and every subscription change is reported", () => {
  const hub = new Hub();
  const seen: [string, number, number][] = [];
  hub.onSubscriptions((topic, count, delta) => seen.push([topic.key, count, delta]));
  // The encoder gets the topic parsed with the frame.
  hub.addFormat(
    "upper",
    (frame, topic) =>
      frame[3] === "skip" ? null : `${topic.name}:${String(frame[3]).toUpperCase()}`,
  );
  const [a, u1, u2] = [new Recorder(), new Recorder("upper"), new Recorder("upper")];
  u1.sendEncoded = (d) => u1.raw.push(d);
  u2.sendEncoded = (d) => u2.raw.push(d);
  for (const s of [a, u1, u2]) hub.subscribe(T, s);
  hub.publish(T, "ev", {});
  hub.publish(T, "skip", {});
  assert.deepEqual(u1.raw, ["t:EV"]);
  assert.equal(u1.raw[0], u2.raw[0]);
  assert.equal(a.frames.length, 2);
  for (const s of [a, u1, u2]) hub.unsubscribe(T, s);
  const k = T.key;
  assert.deepEqual(seen, [[k, 1, 1], [k, 2, 1], [k, 3, 1], [k, 2, -1], [k, 1, -1], [k, 0, -1]]);
});

Deno.test('Hub.publish(): reach "cluster" is also relayed to the other nodes, reach "node" is not; observers see local and relayed publishes alike', () => {
  const hub = new Hub();
  const sub = new Recorder();
  hub.subscribe(T, sub);
  const relayed: unknown[][] = [];
  hub.useRelay((topic, ...rest) => relayed.push([topic.key, ...rest]));
  const observed: unknown[][] = [];
  hub.observe("stream", (topic, payload) => observed.push([topic.key, payload]));
  assert.equal(hub.publish(T, "logged", { n: 1 }), 1);
  assert.equal(hub.publish(T, "ephemeral", { n: 2 }, "x.1", "cluster"), 1);
  assert.deepEqual(relayed, [["pubsub:k:t", "ephemeral", { n: 2 }, "x.1"]]);
  hub.publish(Topic.of("chat", "k", "nobody"), "stream", { n: 3 }); // observed without subscribers
  hub.relayed(Topic.parse("pubsub:k:t")!, "stream", { n: 4 });
  hub.relayed(T, "from-b", { n: 5 });
  assert.deepEqual(observed, [["chat:k:nobody", { n: 3 }], ["pubsub:k:t", { n: 4 }]]);
  assert.equal(relayed.length, 1, "an event from another node is not relayed again");
  assert.deepEqual(sub.frames.map((f) => f[3]), ["logged", "ephemeral", "stream", "from-b"]);
});

Deno.test("Hub.count(): a product's topics count apart, and a product with no subscribed topic left counts 0", () => {
  const hub = new Hub();
  const [a, b] = [new Recorder(), new Recorder()];
  const one = Topic.of("durable", "k", "t:1");
  const two = Topic.of("durable", "k", "t:2");
  const other = Topic.of("pubsub", "k", "t:1");
  assert.equal(hub.count(one), 0);
  for (const s of [a, b]) hub.attach(s);
  hub.subscribe(one, a);
  hub.subscribe(Topic.parse(one.key)!, b);
  hub.subscribe(two, b);
  assert.equal(hub.count(Topic.parse(one.key)!), 2);
  assert.equal(hub.count(two), 1);
  assert.equal(hub.count(Topic.of("durable", "k", "t:3")), 0);
  assert.equal(hub.count(other), 0);
  hub.unsubscribe(two, b);
  assert.equal(hub.count(two), 0);
  assert.equal(hub.count(one), 2);
  hub.unsubscribe(one, a);
  hub.unsubscribe(one, b);
  assert.equal(hub.count(one), 0);
  // Subscribed again after the product had none: counted again.
  hub.subscribe(two, a);
  assert.equal(hub.count(two), 1);
  assert.equal(hub.publish(two, "ev", {}), 1);
});
