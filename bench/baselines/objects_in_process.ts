// The Durable Object write path without HTTP: `ObjectStore.write` (increments) from `writers`
// concurrent loops in one process, over a real LMDB store in a temp dir, as the server runs it
// (its `OrderedLog`, commit queue and hub). Prints one JSON line: writes/s, writes per commit,
// and CPU per write of the whole process and of the JavaScript thread (from /proc), to
// tell the store's cost from HTTP's. Run under Bun (the binary's runtime), config as JSON in
// BENCH_CONFIG (as `runGenerator` passes it) or as the first argument:
//   bun bench/baselines/objects_in_process.ts '{"objects":1,"writers":64,"seconds":3}'
// `"sync": false` opens the store as clustered mode does (commits not waiting for their sync,
// which LMDB runs behind them): the JavaScript side of the path with the disk mostly out of it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StoreEnv } from "../../lib/store/env.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { Hub } from "../../lib/hub/hub.ts";
import { ObjectStore } from "../../lib/objects/store.ts";

const cfg = {
  objects: 1,
  writers: 64,
  seconds: 3,
  warmup: 1,
  ...JSON.parse(process.env.BENCH_CONFIG ?? process.argv[2] ?? "{}"),
};

/** CPU seconds (utime + stime) of this process, or of its main (JavaScript) thread. */
function cpu(thread: boolean): number {
  const stat = readFileSync(
    thread ? `/proc/self/task/${process.pid}/stat` : "/proc/self/stat",
    "utf8",
  );
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

const dir = mkdtempSync(join(tmpdir(), "sb-bench-objects-"));
const env = new StoreEnv(join(dir, "db"), cfg.sync !== false);
const store = new ObjectStore(env, new Hub(), new OrderedLog(env, "objects", { staged: true }));
const app = { appId: "app-1", appKey: "key1" };
let commits = 0;
const batch = env.batch.bind(env);
env.batch = <T>(fn: () => T) => (commits++, batch(fn));

let writes = 0;
let running = true;
async function writer(w: number): Promise<void> {
  let i = w;
  while (running) {
    const key = cfg.objects === 1
      ? "hot"
      : `o${(i = (i * 1103515245 + 12345) % 2147483648) % cfg.objects}`;
    await store.write(
      { ...app, type: "bench", key },
      [{ op: "increment", key: "n", by: 1 }],
      false,
    );
    writes++;
  }
}
const loops = Array.from({ length: cfg.writers }, (_, w) => writer(w + 1));
await new Promise((r) => setTimeout(r, cfg.warmup * 1000));
const [w0, c0, p0, t0, s0] = [writes, commits, cpu(false), cpu(true), performance.now()];
await new Promise((r) => setTimeout(r, cfg.seconds * 1000));
const [w1, c1, p1, t1, s1] = [writes, commits, cpu(false), cpu(true), performance.now()];
running = false;
await Promise.all(loops);
await env.close();
rmSync(dir, { recursive: true, force: true });
const n = w1 - w0;
console.log(JSON.stringify({
  objects: cfg.objects,
  writers: cfg.writers,
  sync: cfg.sync !== false,
  perSecond: Math.round(n / ((s1 - s0) / 1000)),
  writesPerCommit: Math.round((n / (c1 - c0)) * 10) / 10,
  processUsPerWrite: Math.round(((p1 - p0) / n) * 1e7) / 10,
  threadUsPerWrite: Math.round(((t1 - t0) / n) * 1e7) / 10,
}));
