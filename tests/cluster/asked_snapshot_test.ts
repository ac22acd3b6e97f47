// A stopped node that the log cannot bring back asks the others for a snapshot and rebuilds
// from it, without an operator (lib/cluster/divergence/rebuild.ts `wantSnapshot`, lib/cluster/
// snapshots.ts). Node 3 is fed another message at position 40 and stops; from then on it reads
// yet another message at a later position (as from a stream leader whose replica diverged
// there: the nemesis runs in
// bench/results/2026-11-27-cluster-asked-snapshot.md):
//
// - at position 20, which a majority confirmed: its rebuild from the log is refused, and it
//   asks for a snapshot reaching its confirmed position (39);
// - at position 43, after it: the store it rebuilds from the log disagrees with the others
//   there, and it asks for a snapshot reaching position 43.
//
// A healthy node stores that snapshot; node 3 rebuilds from it (the log is read only after it:
// the other message is never read again), takes writes, and holds every acknowledged write in
// order, like the others.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import { readyStatus, startForkedCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const FORK_AT = 40;
const STORED = /cluster snapshot stored .*position=(\d+) .*asked_for=(\d+)/;
const REPLACED = /cluster store replaced .*position=(\d+)/g;

/** Runs the scenario with node 3 reading another message at `otherAt` once stopped; `asked`
 * gives, from node 3's log, the position it asks a snapshot to reach. */
async function healsFromAskedSnapshot(
  otherAt: number,
  asked: (output: string) => number | undefined,
): Promise<void> {
  const key = `asked-${otherAt}`;
  const cluster = await startForkedCluster({
    SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
    SWITCHBOARD_FAULT_OTHER_AT: String(otherAt),
  });
  try {
    const [n1, n2, n3] = cluster.nodes;
    const written: string[] = [];
    for (let i = 1;; i++) {
      const position = await appendAt(n1, key, `v${i}`);
      written.push(`v${i}`);
      if (position >= FORK_AT + 5) break;
    }
    await until(
      "node 3 asks for a snapshot",
      () => Promise.resolve(asked(n3.output()) !== undefined),
      60_000,
    );
    const wanted = asked(n3.output())!;

    // One healthy node (the owner among the nodes other than node 3) stores it.
    await until(
      "a healthy node stores the snapshot asked for",
      () => Promise.resolve(STORED.test(n1.output() + n2.output())),
      60_000,
    );
    const [, position, askedFor] = (n1.output() + n2.output()).match(STORED)!;
    assert.equal(Number(askedFor), wanted);
    assert.ok(Number(position) >= wanted);

    // Node 3 rebuilds from it and takes writes again.
    await until("node 3 rebuilds from the snapshot", () => {
      const replaced = [...n3.output().matchAll(REPLACED)].map((m) => Number(m[1]));
      return Promise.resolve(replaced.some((p) => p >= wanted));
    }, 60_000);
    await until("node 3 takes writes again", async () => (await readyStatus(n3)) === 200, 60_000);
    await appendAt(n3, key, "after");
    written.push("after");
    for (const node of [n1, n2]) {
      await until("node 3 holds the others' object", async () => {
        const [a, b] = await Promise.all([
          call(node, "GET", path(key)),
          call(n3, "GET", path(key)),
        ]);
        return JSON.stringify(a.body) === JSON.stringify(b.body);
      });
    }
    const list: string[] = (await call(n3, "GET", path(key))).body.state.l;
    assert.deepEqual(list, written, "every acknowledged write, in order, on node 3");
  } finally {
    await cluster.stop();
  }
}

Deno.test({
  name:
    "cluster asked snapshot: a node whose rebuild the log refuses rebuilds from a snapshot a healthy node stores on its request",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const refused =
      /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed \(position 20\).* confirmed=(\d+) .*snapshot_asked=true/;
    await healsFromAskedSnapshot(20, (output) => {
      const confirmed = output.match(refused)?.[1];
      return confirmed === undefined ? undefined : Number(confirmed);
    });
  },
});

Deno.test({
  name:
    "cluster asked snapshot: a node whose store rebuilt from the log disagrees again rebuilds from a snapshot reaching the disagreement",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Stopped twice: at the fork, then (rebuilt from the log) at the other message.
    const stops =
      /applied the log differently from a majority of the nodes \([^)]*\) by position (\d+)/g;
    await healsFromAskedSnapshot(FORK_AT + 3, (output) => {
      const at = [...output.matchAll(stops)].map((m) => Number(m[1]));
      return at.length >= 2 ? at[1] : undefined;
    });
  },
});
