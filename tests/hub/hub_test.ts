import assert from "node:assert/strict";
import { Packr } from "msgpackr";
import { Hub, type Subscriber } from "../../lib/hub/hub.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { tempStore } from "../helpers/temp_store.ts";

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A subscriber that decodes and records every frame. */
let socketCounter = 0;
class Recorder implements Subscriber {
  frames: unknown[][] = [];
  raw: (string | Uint8Array)[] = [];
  readonly socketId = `r.${++socketCounter}`;
  constructor(readonly format: string = "json") {}
  sendEncoded(data: string | Uint8Array) {
    this.raw.push(data);
    this.frames.push(typeof data === "string" ? JSON.parse(data) : packr.unpack(data as Uint8Array));
  }
}

Deno.test("Hub.publish() encodes once per format and reaches every subscriber but the excluded one", () => {
  const hub = new Hub();
  const [a, b, c, m] = [new Recorder(), new Recorder(), new Recorder(), new Recorder("msgpack")];
  for (const s of [a, b, c, m]) {
    hub.attach(s);
    hub.subscribe("t", s);
  }
  assert.equal(hub.publish("t", "ev", { x: 1 }, c.socketId), 3);
  assert.deepEqual(a.frames, [[null, null, "t", "ev", { x: 1 }]]);
  assert.equal(a.raw[0], b.raw[0]);
  assert.deepEqual(m.frames, [[null, null, "t", "ev", { x: 1 }]]);
  assert.equal(c.frames.length, 0);
  hub.unsubscribe("t", a);
  assert.equal(hub.count("t"), 3);
  assert.deepEqual(hub.topics(""), ["t"]);
});

Deno.test("Hub + OrderedLog: concurrent publishers and joins with replay see each stream exactly once, in order", async () => {
  const { env } = tempStore();
  const log = new OrderedLog(env);
  const hub = new Hub();
  const streams = ["s1", "s2", "s3"];
  const seen = new Map<Recorder, { stream: string; positions: number[] }>();

  // The join procedure products use: snapshot at N, then in the turn N is published, replay
  // from `after`, reply and subscribe.
  const join = (stream: string, after: number) => {
    const sub = new Recorder();
    const record = { stream, positions: [] as number[] };
    seen.set(sub, record);
    const n = log.head(stream);
    log.whenPublished(stream, n, () => {
      for (const r of log.after(stream, after)) if (r.position <= n) record.positions.push(r.position);
      hub.subscribe(stream, {
        socketId: `j.${++socketCounter}`,
        format: "json",
        sendEncoded: (d) => record.positions.push((JSON.parse(d as string)[4] as { pos: number }).pos),
      });
    });
  };

  const writers = streams.flatMap((stream) =>
    Array.from({ length: 150 }, () =>
      log.append(stream, () => ({ entries: [0], result: 0 }), (pos) => hub.publish(stream, "e", { pos })))
  );
  const joiners: Promise<void>[] = [];
  for (let i = 0; i < 30; i++) {
    joiners.push(new Promise((r) => setTimeout(r, i)).then(() => join(streams[i % 3], i % 2 ? 0 : Math.max(0, log.head(streams[i % 3]) - 3))));
  }
  await Promise.all([...writers, ...joiners]);
  for (const { stream, positions } of seen.values()) {
    const start = positions[0] ?? 1;
    assert.deepEqual(positions, Array.from({ length: 150 - start + 1 }, (_, i) => start + i), `subscriber of ${stream}`);
  }
  await env.close();
});

Deno.test("Hub: an added format gets its own encoding (null skips), and every subscription change is reported", () => {
  const hub = new Hub();
  const seen: [string, number, number][] = [];
  hub.onSubscriptions((topic, count, delta) => seen.push([topic, count, delta]));
  hub.addFormat("upper", (frame) => frame[3] === "skip" ? null : String(frame[3]).toUpperCase());
  const [a, u1, u2] = [new Recorder(), new Recorder("upper"), new Recorder("upper")];
  u1.sendEncoded = (d) => u1.raw.push(d);
  u2.sendEncoded = (d) => u2.raw.push(d);
  for (const s of [a, u1, u2]) hub.subscribe("t", s);
  hub.publish("t", "ev", {});
  hub.publish("t", "skip", {});
  assert.deepEqual(u1.raw, ["EV"]);
  assert.equal(u1.raw[0], u2.raw[0]);
  assert.equal(a.frames.length, 2);
  for (const s of [a, u1, u2]) hub.unsubscribe("t", s);
  assert.deepEqual(seen, [["t", 1, 1], ["t", 2, 1], ["t", 3, 1], ["t", 2, -1], ["t", 1, -1], ["t", 0, -1]]);
});

Deno.test("Hub.publish(): reach \"cluster\" is also relayed to the other nodes, reach \"node\" is not; a relayed event is observed, then published here", () => {
  const hub = new Hub();
  const sub = new Recorder();
  hub.subscribe("t", sub);
  const relayed: unknown[][] = [];
  hub.useRelay((...args) => relayed.push(args));
  const observed: unknown[][] = [];
  hub.onRelayed((...args) => observed.push(args));
  assert.equal(hub.publish("t", "logged", { n: 1 }), 1);
  assert.equal(hub.publish("t", "ephemeral", { n: 2 }, "x.1", "cluster"), 1);
  assert.deepEqual(relayed, [["t", "ephemeral", { n: 2 }, "x.1"]]);
  hub.relayed("t", "from-b", { n: 3 });
  assert.deepEqual(observed, [["t", "from-b", { n: 3 }]]);
  assert.equal(relayed.length, 1, "an event from another node is not relayed again");
  assert.deepEqual(sub.frames.map((f) => f[3]), ["logged", "ephemeral", "from-b"]);
});
