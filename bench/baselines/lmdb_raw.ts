// Baseline: raw lmdb-js, the same library and durability settings Switchboard uses
// (overlappingSync false, msgpack values, ordered-binary array keys). Runs under Deno or Bun
// (the runner picks the server's runtime). Modes, from BENCH_CONFIG:
//   {mode:"writes", dir, concurrency, seconds, warmup, objects, valueBytes}
//      closed-loop awaited durable puts; writes/s and p50/p99 latency
//   {mode:"shape", ...same as writes}
//      the same closed loop, each write the shape of the server's increment transaction: read
//      the stream's head and the object's state, put the log entry, the head and the state
//   {mode:"range", dir, count, valueBytes}
//      writes `count` entries exactly as the server stores an object's log entry (its codec
//      options, `[time, packEntry(...)]`), and as many op maps under lmdb-js's defaults (the
//      shape issue 18's replay goal was measured against), then times full range reads of each
//      (entries/s)
import { open } from "lmdb";
import { latencySummary, Reservoir } from "../lib/stats.ts";
import { CODEC_OPTIONS } from "../../lib/store/codec.ts";
import { packEntry } from "../../lib/objects/entry.ts";

declare const process: { env: Record<string, string | undefined> };
const cfg = JSON.parse(process.env.BENCH_CONFIG ?? "{}");
const root = open({ path: cfg.dir, overlappingSync: false, encoding: "msgpack" });
const db = root.openDB({ name: "log", keyEncoding: "ordered-binary", encoding: "msgpack" });
const pad = "x".repeat(Math.max(0, cfg.valueBytes - 20));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const meta = root.openDB({ name: "meta", keyEncoding: "ordered-binary", encoding: "msgpack" });
const state = root.openDB({ name: "state", keyEncoding: "ordered-binary", encoding: "msgpack" });

/** One write of the server's transaction shape on `obj` (the same-shape floor). */
function shapedWrite(obj: string): Promise<unknown> {
  return root.transaction(() => {
    const head = (meta.get(obj) as { head: number } | undefined)?.head ?? 0;
    const n = ((state.get(obj) as { state: { n: number } } | undefined)?.state.n ?? 0) + 1;
    db.put([obj, head + 1], {
      t: Date.now(),
      e: { batch: false, ops: [{ op: "increment", key: "n", value: n }] },
    });
    meta.put(obj, { head: head + 1, first: 1 });
    state.put(obj, { state: { n } });
  });
}

if (cfg.mode === "writes" || cfg.mode === "shape") {
  const lat = new Reservoir();
  let running = true;
  let measuring = false;
  let count = 0;
  const writer = async (w: number) => {
    let n = 0;
    while (running) {
      const obj = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
      n++;
      const t0 = performance.now();
      if (cfg.mode === "shape") await shapedWrite(obj);
      else await db.put(["app-1", "bench", obj, w, n], { n, pad });
      if (measuring) {
        lat.add(performance.now() - t0);
        count++;
      }
    }
  };
  const writers = Array.from({ length: cfg.concurrency }, (_, w) => writer(w));
  await sleep(cfg.warmup * 1000);
  const t0 = performance.now();
  measuring = true;
  await sleep(cfg.seconds * 1000);
  measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  running = false;
  await Promise.all(writers);
  console.log(
    JSON.stringify({ writes: count, perSecond: count / elapsed, ...latencySummary(lat.values) }),
  );
} else if (cfg.mode === "range") {
  // Two shapes: the server's stored bytes (perSecond), and the one the goal was set
  // against, an op map under lmdb-js's default msgpack options (legacyPerSecond).
  const stream = "app-1/bench/replay";
  const log = root.openDB({
    name: "objects:entries",
    keyEncoding: "ordered-binary",
    encoding: "msgpack",
    ...CODEC_OPTIONS,
  });
  await root.transaction(() => {
    for (let i = 1; i <= cfg.count; i++) {
      log.put([stream, i], [
        Date.now(),
        packEntry(false, [{ op: "set", key: "v", value: { n: i, pad } }]),
      ]);
      db.put([stream, i], { op: "set", key: "v", value: { n: i, pad } });
    }
  });
  /** The median of 5 full range reads of `from` after 3 warm-up reads, entries/s. */
  const rate = (from: typeof db) => {
    const rates: number[] = [];
    for (let round = -3; round < 5; round++) {
      const t0 = performance.now();
      let n = 0;
      for (const { value } of from.getRange({ start: [stream, 0], end: [stream, Infinity] })) {
        if (value) n++;
      }
      if (n !== cfg.count) throw new Error(`read ${n} of ${cfg.count}`);
      if (round >= 0) rates.push(n / ((performance.now() - t0) / 1000));
    }
    return rates.sort((a, b) => a - b)[2];
  };
  console.log(
    JSON.stringify({ entries: cfg.count, perSecond: rate(log), legacyPerSecond: rate(db) }),
  );
}
await root.close();
