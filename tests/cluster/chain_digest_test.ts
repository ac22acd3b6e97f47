// The replicated store's chained digest of its history (lib/cluster/divergence/history.ts
// `chainDigest`, compared by a rebuild's guard, lib/cluster/divergence/guard.ts), driven through
// the in-memory stand-in of the JetStream link:
// - every position applied keeps the digest in its record, and every 4096 positions for good
//   (`cluster:chain`), equal to the chain of the batch ids the log holds, across a restart;
// - a node restarted with its store marked diverged whose rebuild fails (a read of the log
//   fails: its NATS server refuses JetStream requests) serves stopped and tries again later,
//   instead of failing to start; once the reads work it rebuilds.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ClusterLink } from "../../lib/cluster/link.ts";
import { CHAIN_CHECKPOINT_EVERY } from "../../lib/cluster/divergence/guard.ts";
import { CHAIN_START, chainDigest } from "../../lib/cluster/divergence/history.ts";
import { ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { fakeStream } from "./fake_link.ts";

const POSITIONS = CHAIN_CHECKPOINT_EVERY + 20;

/** A stream holding `POSITIONS` messages of another node, one write each. */
function filledStream() {
  const stream = fakeStream();
  for (let seq = 1; seq <= POSITIONS; seq++) {
    stream.add({
      o: "other",
      b: `x-${seq}`,
      base: seq - 1,
      r: { p: [], g: [], a: [] },
      w: [[0, "objects", ["row", seq], seq]],
    });
  }
  return stream;
}

/** The chained digests the store at `path` keeps: per record, and for good. */
async function keptDigests(path: string) {
  const store = new StoreEnv(path, false);
  try {
    const records = new Map<number, string | undefined>();
    for (const { key, value } of store.db("cluster:recent").getRange()) {
      records.set(key as number, (value as { c?: string }).c);
    }
    const kept = new Map<number, string>();
    for (const { key, value } of store.db("cluster:chain").getRange()) {
      kept.set(key as number, value as string);
    }
    return { records, kept };
  } finally {
    await store.close();
  }
}

Deno.test({
  name:
    "chain digest: every position applied keeps the digest of the whole history; a failed rebuild at start is tried again, never fatal",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const stream = filledStream();
    const path = join(tempDir("sb-chain-"), "store.mdb");
    let env = new ReplicatedEnv(path, stream.link, { writeDeadlineMs: 10_000 });
    await env.start(20_000);
    assert.equal(env.applied, POSITIONS);
    await env.close();

    const chain = [CHAIN_START];
    for (let seq = 1; seq <= POSITIONS; seq++) {
      chain.push(chainDigest(chain[seq - 1], seq, `x-${seq}`));
    }
    const { records, kept } = await keptDigests(path);
    assert.equal(records.size, 4096, "records of the last 4096 positions only");
    for (const [seq, c] of records) assert.equal(c, chain[seq], `digest at ${seq}`);
    assert.deepEqual([...kept], [[CHAIN_CHECKPOINT_EVERY, chain[CHAIN_CHECKPOINT_EVERY]]]);

    // Marked diverged with positions up to 4000 confirmed (as a node that stopped itself).
    const store = new StoreEnv(path, false);
    await store.db("cluster:state").put("diverged", "cluster unavailable: test");
    await store.db("cluster:state").put("confirmed", 4000);
    await store.db("cluster:state").put("diverged_from", 4001);
    await store.close();

    let readsFail = true;
    const link = {
      ...(stream.link as unknown as Record<string, unknown>),
      read: (
        seq: number,
      ) => (readsFail ? Promise.reject(new Error("NatsError: 503")) : stream.link.read(seq)),
      // No snapshot: the rebuild starts from the empty store.
      objectStore: () => Promise.resolve({ info: () => Promise.resolve(null) }),
      readFailed: () => {},
    } as unknown as ClusterLink;
    env = new ReplicatedEnv(path, link, {
      writeDeadlineMs: 10_000,
      rebuildPauseMs: 50,
    });
    try {
      // Starts, stopped: the guard could not read the log.
      await env.start(20_000);
      assert.equal(env.stopped, true);
      assert.equal(env.applied, POSITIONS, "the store was not replaced");
      readsFail = false;
      for (const deadline = Date.now() + 30_000; env.stopped && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(env.stopped, false, "rebuilt once the reads work");
      assert.equal(env.applied, POSITIONS);
    } finally {
      await env.close();
    }
    // Rebuilt from the empty store: the same digests again.
    const again = await keptDigests(path);
    for (const [seq, c] of again.records) {
      assert.equal(c, chain[seq], `digest at ${seq} after the rebuild`);
    }
    assert.deepEqual([...again.kept], [[CHAIN_CHECKPOINT_EVERY, chain[CHAIN_CHECKPOINT_EVERY]]]);
  },
});
