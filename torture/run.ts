// The fault suite: `deno task torture [--short] [--minutes N] [--seed S]`; `--cluster` runs the
// cluster nemesis instead (cluster.ts: 3 nats-servers, 3 nodes; `--short` is its CI form). Runs against the
// binary (SWITCHBOARD_BIN, default dist/switchboard) on loopback only, each part bounded in
// time; prints the counts and exits 1 on any failure. `--short` is the CI form (~3 minutes).
// `--seed S` replays a run; the default seed is fixed, `--seed random` picks one.
import { existsSync } from "node:fs";
import process from "node:process";
import { churn } from "./churn.ts";
import { crashLoop } from "./crash.ts";
import { fuzz } from "./fuzz.ts";
import { webhooks } from "./webhooks.ts";
import { staleLock } from "./stale_lock.ts";
import { clusterNemesis } from "./cluster.ts";
import type { PartResult } from "./common.ts";

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const short = args.includes("--short");
const minutes = Number(flag("--minutes") ?? (short ? 2 : 10));
// A fixed default seed keeps CI deterministic; `--seed random` explores (the seed is printed).
const seedArg = flag("--seed") ?? "20261122";
const seed = seedArg === "random" ? Date.now() % 2 ** 31 : Number(seedArg);
const bin = Deno.env.get("SWITCHBOARD_BIN") ??
  new URL("../dist/switchboard", import.meta.url).pathname;
if (!existsSync(bin)) {
  console.error(`torture: no binary at ${bin} (run deno task compile, or set SWITCHBOARD_BIN)`);
  process.exit(2);
}
Deno.env.set("SWITCHBOARD_BIN", bin);

// Budget shares: fuzzing 40%, crash loop 35%, churn 25%; webhooks under faults on top (50%);
// or the cluster nemesis alone.
const total = minutes * 60_000;
console.log(
  `torture: ${short ? "short" : "long"} run, ${minutes} min, seed ${seed}, binary ${bin}`,
);
const results: PartResult[] = [];
const nemesis = (budget: { ms: number; seed: number }) => clusterNemesis({ ...budget, short });
const parts = args.includes("--cluster")
  ? [[nemesis, 1] as const]
  : [[fuzz, 0.4], [crashLoop, 0.35], [churn, 0.25], [staleLock, 0], [webhooks, 0.5]] as const;
for (const [part, share] of parts) {
  const started = Date.now();
  const r = await part({ ms: total * share, seed });
  results.push(r);
  const secs = ((Date.now() - started) / 1000).toFixed(0);
  console.log(
    `  ${r.name} (${secs} s): ${Object.entries(r.counts).map(([k, v]) => `${k} ${v}`).join(", ")}` +
      (r.failures.length ? `\n    FAILED:\n      ${r.failures.join("\n      ")}` : ", ok"),
  );
}
const failed = results.filter((r) => r.failures.length);
console.log(
  failed.length
    ? `torture: ${failed.length} part(s) failed (seed ${seed})`
    : "torture: all parts passed",
);
process.exit(failed.length ? 1 : 0);
