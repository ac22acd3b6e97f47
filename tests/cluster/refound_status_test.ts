// `switchboard cluster status` (lib/cluster/divergence/refound.ts) on stores made here: it reads each
// store's diverged mark, confirmed position and kept records, and tells which store holds every
// other one's confirmed history, compared as the rebuild guard compares it (batch ids of the
// kept records, chained digests for what lies before them).
import assert from "node:assert/strict";
import { StoreEnv, storePath } from "../../lib/store/env.ts";
import { CHAIN_START, chainDigest } from "../../lib/cluster/divergence/history.ts";
import { clusterStatus, lacks, readStore, refound } from "../../lib/cluster/divergence/refound.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** A store that applied `batches` (position i + 1 holds batches[i]), keeping a record of the
 * positions from `keptFrom` on and a checkpoint digest at `checkpoint`; marked diverged with
 * `confirmed` when given. */
async function store(
  batches: string[],
  opts: { confirmed?: number; keptFrom?: number; checkpoint?: number } = {},
): Promise<string> {
  const dir = tempDir("sb-refound-status-");
  const env = new StoreEnv(storePath(dir), true);
  try {
    const recent = env.db("cluster:recent");
    const chain = env.db("cluster:chain");
    const state = env.db("cluster:state");
    await env.root.transaction(() => {
      let c = CHAIN_START;
      batches.forEach((b, i) => {
        const seq = i + 1;
        c = chainDigest(c, seq, b);
        if (seq >= (opts.keptFrom ?? 1)) recent.put(seq, { b, c });
        if (seq === opts.checkpoint) chain.put(seq, c);
      });
      state.put("applied", batches.length);
      if (opts.confirmed !== undefined) {
        state.put(
          "diverged",
          "cluster unavailable: the log no longer holds writes a majority confirmed (position 3)",
        );
        state.put("confirmed", opts.confirmed);
      }
    });
  } finally {
    await env.close();
  }
  return dir;
}

const history = (n: number, prefix = "b") =>
  Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

Deno.test("cluster status: names the store holding every confirmed history", async () => {
  const longest = await store(history(30), { confirmed: 28 });
  const shorter = await store([...history(20), "x21", "x22"], { confirmed: 20 });
  const out = await clusterStatus([shorter, longest]);
  assert.match(
    out,
    new RegExp(`${longest}:\\n  position applied: +30\\n  diverged: +yes \\(cluster unavailable`),
  );
  assert.match(out, /confirmed by a majority: up to position 28/);
  assert.match(out, /records kept: +positions 1-30/);
  assert.match(
    out,
    new RegExp(
      `${shorter} holds ${longest}'s confirmed history: no \\(${longest} confirmed up to position 28, past ${shorter}'s position 22\\)`,
    ),
  );
  assert.match(out, new RegExp(`${longest} holds ${shorter}'s confirmed history: yes`));
  assert.match(
    out,
    new RegExp(`re-found on: ${longest} \\(holds every confirmed history given\\)`),
  );
});

Deno.test("cluster status: another batch at a confirmed position, by record or by digest only", async () => {
  const a = await store(history(30), { confirmed: 30 });
  const b = await store([...history(9), "other", ...history(30).slice(10)], { confirmed: 30 });
  assert.match(
    (await lacks(await readStore(a), await readStore(b))) ?? "",
    /holds another history than .* confirmed, at position 10/,
  );
  // Records kept only from 20 on; a checkpoint at 16: the difference at 10 is seen by the digest.
  const c = await store(history(30), { confirmed: 30, keptFrom: 20, checkpoint: 16 });
  const d = await store([...history(9), "other", ...history(30).slice(10)], {
    confirmed: 30,
    keptFrom: 20,
    checkpoint: 16,
  });
  const why = await lacks(await readStore(c), await readStore(d));
  assert.match(why ?? "", /at or before position (1[0-9]|2[0-9]|30)/);
  const out = await clusterStatus([c, d]);
  assert.match(
    out,
    /re-found on: none of these \(no store holds every confirmed history given; do not re-found\)/,
  );
});

Deno.test("cluster refound: refuses a store that is not marked diverged, or one lacking a given store's confirmed history, before it connects", async () => {
  const healthy = await store(history(10));
  await assert.rejects(
    refound({ dataDir: healthy, nats: ["nats://127.0.0.1:1"], others: [] }),
    /the store is not marked diverged; a refound is for a cluster whose every node refuses to rebuild \(nothing changed\)/,
  );
  const short = await store(history(10), { confirmed: 8 });
  const long = await store(history(20), { confirmed: 18 });
  await assert.rejects(
    refound({ dataDir: short, nats: ["nats://127.0.0.1:1"], others: [long] }),
    /refusing to re-found on .*confirmed up to position 18, past .*position 10 \(nothing changed/,
  );
  assert.equal((await readStore(short)).diverged !== undefined, true, "the store is untouched");
  await assert.rejects(clusterStatus([tempDir("sb-refound-empty-")]), /no store at /);
});
