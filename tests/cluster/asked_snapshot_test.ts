// A stopped node whose rebuild is refused (the log, as the stream's leader holds it, lost
// history a majority confirmed) asks the others for a snapshot reaching its confirmed position
// and rebuilds from it, without an operator (lib/cluster/rebuild.ts `wantSnapshot`,
// lib/cluster/snapshots.ts). Node 3 is fed another message at position 40 and stops; from then
// on it reads yet another message at position 20 (as from a stream leader whose replica
// diverged there: the nemesis runs in docs/cluster.md), so a rebuild from the log is refused.
// A healthy node stores a snapshot reaching position 39; node 3 rebuilds from it (the log is
// read only after it: position 20 is never read again), takes writes, and holds every
// acknowledged write where it was acked, like the others.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { startForkedCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const FORK_AT = 40;
const OTHER_AT = 20;
const KEY = "asked";
const REFUSED = /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed \(position 20\).* confirmed=(\d+) .*snapshot_asked=true/;

/** /readyz status of `node`. */
async function readyStatus(node: TestServer): Promise<number> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  await r.body?.cancel();
  return r.status;
}

Deno.test({
  name: "cluster asked snapshot: a node whose rebuild the log refuses rebuilds from a snapshot a healthy node stores on its request",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cluster = await startForkedCluster({
      SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
      SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT),
    });
    try {
      const [n1, n2, n3] = cluster.nodes;
      const written: string[] = [];
      for (let i = 1;; i++) {
        const position = await appendAt(n1, KEY, `v${i}`);
        written.push(`v${i}`);
        if (position >= FORK_AT + 2) break;
      }
      await until("node 3 refuses to rebuild from the log and asks for a snapshot", () => Promise.resolve(REFUSED.test(n3.output())), 60_000);
      const confirmed = Number(n3.output().match(REFUSED)![1]);
      assert.ok(confirmed >= OTHER_AT && confirmed < FORK_AT, `confirmed position ${confirmed}`);

      // One healthy node (the owner among the nodes other than node 3) stores the snapshot.
      const stored = /cluster snapshot stored .*position=(\d+) .*asked_for=(\d+)/;
      await until("a healthy node stores the snapshot asked for", () => Promise.resolve(stored.test(n1.output() + n2.output())), 60_000);
      const [, position, askedFor] = (n1.output() + n2.output()).match(stored)!;
      assert.equal(Number(askedFor), confirmed);
      assert.ok(Number(position) >= confirmed);

      // Node 3 rebuilds from it and takes writes again.
      await until("node 3 replaced its store", () => Promise.resolve(/cluster store replaced .*position=(\d+)/.test(n3.output())), 60_000);
      const replacedAt = Number(n3.output().match(/cluster store replaced .*position=(\d+)/)![1]);
      assert.ok(replacedAt >= confirmed, `rebuilt from the snapshot (position ${replacedAt}), not from the log's start`);
      await until("node 3 takes writes again", async () => (await readyStatus(n3)) === 200, 60_000);
      await appendAt(n3, KEY, "after");
      written.push("after");
      for (const node of [n1, n2]) {
        await until("node 3 holds the others' object", async () => {
          const [a, b] = await Promise.all([call(node, "GET", path(KEY)), call(n3, "GET", path(KEY))]);
          return JSON.stringify(a.body) === JSON.stringify(b.body);
        });
      }
      const list: string[] = (await call(n3, "GET", path(KEY))).body.state.l;
      assert.deepEqual(list, written, "every acknowledged write, in order, on node 3");
    } finally {
      await cluster.stop();
    }
  },
});
