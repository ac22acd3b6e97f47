// Baseline: the durable floor of an increment on the project's mandated stack. Bun.serve (as the
// binary serves) and lmdb-js opened with the store's durability settings (overlappingSync
// false: a put's promise resolves after its commit is synced; msgpack with the store's codec
// options; lmdb-js's own group commit: the puts of one event-loop turn are one batch, and
// batches queued while a commit syncs commit next). Nothing else: no routing, credentials,
// validation, log layer, commit queue, metrics beyond two counters. Per request it parses the
// JSON body, reads the object's counter (held in memory after the first read of the stored
// row), adds `by`, and puts, by variant:
//   counter  the counter row
//   log      the counter row and one small log entry keyed [object, log id]
//   shape    Switchboard's storage shape: the log entry, and the counter row only every 32nd
//            write of an object (its state checkpoint; in between it is derived from the log)
//   serial   the store's shape, one commit at a time as Switchboard's commit queue runs them:
//            writes arriving while a commit is under way wait for it to settle, then go
//            together (lmdb-js otherwise queues them behind it, and its write thread starts
//            the next transaction without waiting for the JavaScript thread)
// then awaits the durable commit and replies JSON.
//   POST <any>/<object>/increment {"by":1}   -> {"log_id": n, "value": n} once durable
//   GET /metrics   -> commits and their seconds, durable writes (Switchboard's metric names)
// Run: bun bench/baselines/durable_floor_server.ts [port] [counter|log|shape|serial] [data dir]
// (DURABLE_FLOOR_NOSYNC=1: the environment opened `noSync`, no sync at all: NOT durable, for
// taking the syncs' cost apart only.)
import { mkdtempSync } from "node:fs";
import { setImmediate } from "node:timers";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open } from "lmdb";
import { CODEC_OPTIONS } from "../../lib/store/codec.ts";

// deno-lint-ignore no-explicit-any
declare const Bun: any;
declare const process: { argv: string[]; env: Record<string, string | undefined> };

const variant = ["log", "shape", "serial"].includes(process.argv[3]) ? process.argv[3] : "counter";
const serial = variant === "serial";
const dir = process.argv[4] ?? mkdtempSync(join(tmpdir(), "sb-durable-floor-"));
const noSync = process.env.DURABLE_FLOOR_NOSYNC === "1";
const root = open({
  path: join(dir, "floor.mdb"),
  overlappingSync: false,
  noSync,
  maxDbs: 64,
  encoding: "msgpack",
  sharedStructuresKey: undefined,
  ...CODEC_OPTIONS,
});
const state = root.openDB({ name: "objects:state", encoding: "msgpack", ...CODEC_OPTIONS });
const entries = root.openDB({ name: "objects:entries", encoding: "msgpack", ...CODEC_OPTIONS });

/** Per object: its counter and its last log id (read from the store on first use). */
const held = new Map<string, { value: number; head: number }>();

// Commits: lmdb-js's `aftercommit` event, once per LMDB write transaction. Their mean time: from
// a batch's first put to its commit promise settling (every put of one batch returns the same
// promise), over the batches settled first in their turn (one transaction may take several).
let commits = 0;
root.on("aftercommit", () => commits++);
let lastCommit: Promise<unknown> | undefined;
let settledThisTurn = false;
let timed = 0;
let timedSeconds = 0;
let writes = 0;
/** `serial`: the commit under way, and the writes waiting for it to settle. */
let underway: Promise<unknown> | undefined;
const waiting: (() => void)[] = [];

const server = Bun.serve({
  port: Number(process.argv[2] ?? 0),
  hostname: "127.0.0.1",
  async fetch(req: Request) {
    if (req.method === "GET") {
      return new Response(
        `switchboard_lmdb_commit_seconds_sum ${
          timed ? (timedSeconds / timed) * commits : 0
        }\nswitchboard_lmdb_commit_seconds_count ${commits}\n` +
          `switchboard_log_appends_total{product="durable"} ${writes}\n`,
      );
    }
    const url = req.url;
    const end = url.lastIndexOf("/");
    const key = url.slice(url.indexOf("/", 8), end);
    const body = await req.json() as { by?: number };
    if (serial && underway) await new Promise<void>((resolve) => waiting.push(resolve));
    let row = held.get(key);
    if (!row) {
      const stored = state.get(key) as { value: number; head: number } | undefined;
      row = stored ?? { value: 0, head: 0 };
      held.set(key, row);
    }
    row.value += body.by ?? 1;
    const logId = ++row.head;
    const value = row.value;
    const entry = variant === "counter"
      ? undefined
      : entries.put([key, logId], [Date.now(), ["increment", "n", body.by ?? 1]]);
    const committed = (variant === "shape" || serial) && logId % 32 !== 0
      ? entry!
      : state.put(key, { value, head: logId });
    if (committed !== lastCommit) {
      lastCommit = committed;
      if (serial) {
        underway = committed;
        committed.then(() => {
          underway = undefined;
          for (const wake of waiting.splice(0)) wake();
        });
      }
      const started = performance.now();
      committed.then(() => {
        if (settledThisTurn) return;
        settledThisTurn = true;
        setImmediate(() => (settledThisTurn = false));
        timed++;
        timedSeconds += (performance.now() - started) / 1000;
      });
    }
    await committed;
    writes++;
    return Response.json({ log_id: logId, value });
  },
});
console.log(
  `durable floor baseline (${variant}${
    noSync ? ", noSync" : ""
  }) listening on http://127.0.0.1:${server.port}`,
);
