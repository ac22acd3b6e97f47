// A helper process of `speculation_test.ts`: opens the LMDB store at `path` as a node does and
// holds its write lock (a write transaction left open) until the file `release` exists, or
// `ms` passed. Prints `held` once it holds the lock; writes the file `letGo` just before it
// lets the lock go (so while that file does not exist, the lock is held).
import { existsSync, writeFileSync } from "node:fs";
import { StoreEnv } from "../../lib/store/env.ts";

const [path, release, letGo, ms] = Deno.args;
const env = new StoreEnv(path, false);
const pause = new Int32Array(new SharedArrayBuffer(4));
env.root.transactionSync(() => {
  console.log("held");
  const until = Date.now() + Number(ms);
  while (Date.now() < until && !existsSync(release)) Atomics.wait(pause, 0, 0, 10);
  writeFileSync(letGo, "");
});
await env.close();
