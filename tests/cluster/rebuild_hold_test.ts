// A node whose rebuilt store a majority disagrees with does not rebuild again, replaying the log
// each time, while nothing a rebuild reads or is judged by has changed (run G1 in
// bench/results/2026-11-27-cluster-G1-every-node-stopped.md: node 2 rebuilt 14 times against peers
// that kept the same reports). Node 3 is fed another message at one position
// (SWITCHBOARD_FAULT_FORK_AT) and stops; once stopped it reads yet another message at a later
// position, one no majority confirmed when it stopped (SWITCHBOARD_FAULT_OTHER_AT), so the guard
// lets its rebuild through and the store it rebuilds disagrees with the two others again. It then
// holds its next rebuild, with the log and the others' reports unchanged, and rebuilds once they
// change (the stream gets another leader; a write through node 1); restarted without the fault, it
// rebuilds and takes writes again. In both tests here the healthy nodes ignore node 3's requests
// for a snapshot.
import assert from "node:assert/strict";
import { connect } from "nats";
import { LOG_STREAM } from "../../lib/cluster/link.ts";
import { call } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { NO_ASKED_SNAPSHOT, startForkedCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const FORK_AT = 40;
const OTHER_AT = FORK_AT + 3;
const KEY = "held";
const STOPPED = /applied the log differently from a majority of the nodes/;
const HELD = /cluster rebuild held/g;
const RESUMED = /cluster rebuild no longer held/g;
const REPLACED = /cluster store replaced/g;
const REBUILDING = /cluster node rebuilding its store/g;

/** Whether the last of `node`'s rebuild lines says its rebuild is held (none when it is not). */
function holding(node: TestServer): boolean {
  const lines = node.output().split("\n").filter((l) =>
    /cluster rebuild (held|no longer held)|cluster node rebuilding its store/.test(l)
  );
  return /cluster rebuild held/.test(lines.at(-1) ?? "");
}

/** The healthy nodes gave the streams node 3 named a new epoch (a write each: they then are
 * idle), and a while passed for node 3 to see it. */
async function renewed(nodes: TestServer[]): Promise<void> {
  for (const node of nodes) {
    await until(
      "the epoch renewal is done",
      () =>
        Promise.resolve(/cluster (renewed|found) the epochs of the streams/.test(node.output())),
      30_000,
    );
  }
  await new Promise((r) => setTimeout(r, 2000));
}

/** How many lines of `node`'s log match `re`. */
function count(node: TestServer, re: RegExp): number {
  return node.output().match(re)?.length ?? 0;
}

/** Asks JetStream for another leader of the log's stream (retried while it elects). */
async function stepDown(urls: string[]): Promise<void> {
  const nc = await connect({ servers: urls });
  try {
    for (let i = 0;; i++) {
      try {
        const r = await nc.request(
          `$JS.API.STREAM.LEADER.STEPDOWN.${LOG_STREAM}`,
          new Uint8Array(),
          { timeout: 5000 },
        );
        const body = JSON.parse(new TextDecoder().decode(r.data));
        assert.ok(body.success, JSON.stringify(body));
        return;
      } catch (err) {
        if (i >= 10) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  } finally {
    await nc.close();
  }
}

/** /readyz of `node`: its status and reason. */
async function readyz(node: TestServer): Promise<{ status: number; reason?: string }> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  const body = await r.json();
  return { status: r.status, reason: body.reason };
}

/** Watches `node` for 12 s: its /readyz answers 503 with `reason` throughout. */
async function staysStopped(node: TestServer, reason: RegExp): Promise<void> {
  for (let i = 0; i < 24; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const ready = await readyz(node);
    assert.equal(ready.status, 503);
    assert.match(ready.reason ?? "", reason);
  }
}

Deno.test({
  name:
    "cluster rebuild hold: a node whose rebuilt store still disagrees rebuilds again only once something changed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let faults = true;
    // A short pause: without the hold, the rebuilds would follow each other within seconds.
    const cluster = await startForkedCluster(
      (): Record<string, string> =>
        faults
          ? {
            SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
            SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT),
            SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "100",
          }
          : {},
      NO_ASKED_SNAPSHOT,
    );
    try {
      const [n1, n2] = cluster.nodes;
      let n3 = cluster.nodes[2];
      let last = 0;
      for (let i = 1; last < OTHER_AT + 3; i++) last = await appendAt(n1, KEY, `v${i}`);
      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())), 30_000);
      await renewed([n1, n2]);
      // It rebuilds, disagrees again and holds its next rebuild (before the hold, it rebuilt
      // again and again: a few rounds show it).
      await until(
        "node 3 rebuilt and stopped again",
        () => Promise.resolve(holding(n3) || count(n3, REPLACED) >= 4),
        90_000,
      );
      assert.ok(count(n3, REPLACED) >= 1, "it rebuilt");
      assert.ok(
        count(n3, /applied the log differently from a majority of the nodes/g) >= 2,
        "it stopped again after a rebuild",
      );

      // Nothing changes: no rebuild, no replay (and the hold is logged once). Without the hold
      // the rebuilds went on, the pause doubling from 100 ms.
      const replaced = count(n3, REPLACED);
      const rebuilding = count(n3, REBUILDING);
      const held = count(n3, HELD);
      const resumed = count(n3, RESUMED);
      await staysStopped(n3, STOPPED);
      assert.equal(count(n3, REPLACED), replaced, "no store replaced while held");
      assert.equal(count(n3, REBUILDING), rebuilding, "no rebuild tried while held");
      assert.ok(held >= 1, "the hold is logged");
      assert.equal(count(n3, HELD), held, "the hold is logged once");
      assert.equal(count(n3, RESUMED), resumed);

      // The stream gets another leader (whose replica might hold other messages): node 3
      // rebuilds (and, the fault still playing, disagrees and holds again).
      await stepDown(cluster.nats.urls);
      await until(
        "node 3 rebuilds once the stream's leader changed",
        () => Promise.resolve(count(n3, REPLACED) > replaced),
        60_000,
      );
      assert.match(n3.output(), /cluster rebuild no longer held.*changed=log/);
      await until("node 3 holds again", () => Promise.resolve(count(n3, HELD) > held), 60_000);

      // A write through node 1 changes the log and the others' reports: the same.
      const replacedBefore = count(n3, REPLACED);
      const heldBefore = count(n3, HELD);
      await appendAt(n1, KEY, "after");
      await until(
        "node 3 rebuilds again",
        () => Promise.resolve(count(n3, REPLACED) > replacedBefore),
        60_000,
      );
      assert.ok(count(n3, RESUMED) >= resumed + 2, "it said the hold ended");
      await until(
        "node 3 holds again",
        () => Promise.resolve(count(n3, HELD) > heldBefore),
        60_000,
      );

      // Restarted without the fault: it rebuilds, agrees with the others and takes writes.
      await cluster.kill(2);
      faults = false;
      n3 = await cluster.restart(2);
      await until(
        "node 3 takes writes again",
        async () => (await readyz(n3)).status === 200,
        60_000,
      );
      await appendAt(n3, KEY, "healed");
      await until("node 3 holds the majority's object", async () => {
        const [a, b] = await Promise.all([call(n1, "GET", path(KEY)), call(n3, "GET", path(KEY))]);
        return a.status === 200 && JSON.stringify(a.body) === JSON.stringify(b.body);
      });
    } finally {
      await cluster.stop();
    }
  },
});

// The same for a refused rebuild (lib/cluster/divergence/guard.ts): node 3, once stopped, reads
// another message at a position a majority confirmed, so every rebuild is refused; it is not
// tried again, reading the log, while what it reads is unchanged, the log growing past the
// refused position included, and is once the stream gets another leader.
Deno.test({
  name: "cluster rebuild hold: a refused rebuild is tried again only once what it reads changed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cluster = await startForkedCluster({
      SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
      SWITCHBOARD_FAULT_OTHER_AT: "20",
      SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "100",
    }, NO_ASKED_SNAPSHOT);
    try {
      const [n1, n2, n3] = cluster.nodes;
      let last = 0;
      for (let i = 1; last < FORK_AT + 3; i++) last = await appendAt(n1, `${KEY}-refused`, `v${i}`);
      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())), 30_000);
      await renewed([n1, n2]);
      const REFUSED = /the log no longer holds writes a majority confirmed \(position 20\)/;
      await until(
        "node 3 refuses its rebuild",
        async () => REFUSED.test((await readyz(n3)).reason ?? ""),
        60_000,
      );
      await until(
        "node 3 holds its next rebuild",
        () => Promise.resolve(holding(n3) || count(n3, REBUILDING) >= 5),
        90_000,
      );
      const rebuilding = count(n3, REBUILDING);
      const held = count(n3, HELD);
      await staysStopped(n3, REFUSED);
      assert.equal(count(n3, REBUILDING), rebuilding, "no rebuild tried while held");
      assert.ok(held >= 1, "the hold is logged");
      assert.equal(count(n3, HELD), held, "the hold is logged once");
      assert.match(n3.output(), /cluster rebuild held.*after=refused/);
      assert.equal(count(n3, REPLACED), 0, "its store is kept");

      // The log grows past the refused position: still held (what the stream holds at or before
      // a confirmed position is the same).
      await appendAt(n1, `${KEY}-refused`, "after");
      await staysStopped(n3, REFUSED);
      assert.equal(count(n3, REBUILDING), rebuilding, "no rebuild tried for a longer log");
      assert.equal(count(n3, HELD), held);

      // The stream gets another leader: tried again (refused again, the fault still playing),
      // then held again.
      await stepDown(cluster.nats.urls);
      await until(
        "node 3 tries again",
        () => Promise.resolve(count(n3, REBUILDING) > rebuilding),
        60_000,
      );
      await until("node 3 holds again", () => Promise.resolve(count(n3, HELD) > held), 60_000);
      assert.match(n3.output(), /cluster rebuild refused again/);
      assert.equal(count(n3, REPLACED), 0, "its store is kept");
    } finally {
      await cluster.stop();
    }
  },
});
