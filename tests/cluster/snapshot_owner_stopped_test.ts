// Snapshots go on while the node that owns them stopped itself (lib/cluster/nodes.ts `serving`,
// lib/cluster/snapshots.ts). Node 1 owns the snapshots among the three nodes; it is fed another
// message at position 40 and stops, and its rebuild from the log is refused (it reads yet another
// message at position 20, which a majority confirmed). No node hears its requests for a snapshot
// (`NO_ASKED_SNAPSHOT`), so only the regular snapshot, due at position 60, can bring it back.
// Node 1 says in its heartbeats that it stopped itself; node 2 or 3 takes the snapshot in its
// place (a stopped owner applies nothing and never would), and node 1 rebuilds from it.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import { ownerOf } from "../../lib/cluster/nodes.ts";
import { SNAPSHOT_TOPIC } from "../../lib/cluster/snapshots.ts";
import { NO_ASKED_SNAPSHOT, readyStatus, startCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const FORK_AT = 40;
const EVERY = 60;
const STORED = /cluster snapshot stored .*position=(\d+)/;
const REFUSED =
  /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed \(position 20\)/;
const REPLACED = /cluster store replaced .*position=(\d+)/g;

Deno.test({
  name:
    "cluster snapshots: the owner stopped itself, so another node takes the regular snapshot, and the stopped node rebuilds from it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    assert.equal(
      ownerOf(SNAPSHOT_TOPIC, ["node-1", "node-2", "node-3"]),
      "node-1",
      "node 1 owns the snapshots",
    );
    const key = "stopped-owner";
    const cluster = await startCluster({
      env: {
        SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300",
        SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000",
        SWITCHBOARD_CLUSTER_SNAPSHOT_EVERY: String(EVERY),
        ...NO_ASKED_SNAPSHOT,
      },
      nodeEnv: (
        i,
      ): Record<
        string,
        string
      > => (i !== 0
        ? {}
        : { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT), SWITCHBOARD_FAULT_OTHER_AT: "20" }),
    });
    try {
      const [n1, n2, n3] = cluster.nodes;
      const written: string[] = [];
      // Up to the fork, then until node 1's rebuild was refused (it stays stopped).
      for (let i = 1;; i++) {
        const position = await appendAt(n2, key, `v${i}`);
        written.push(`v${i}`);
        if (position >= FORK_AT + 2) break;
      }
      await until(
        "node 1's rebuild is refused",
        () => Promise.resolve(REFUSED.test(n1.output())),
        60_000,
      );
      assert.ok(
        !STORED.test(n1.output() + n2.output() + n3.output()),
        "no snapshot before one is due",
      );

      // Past the snapshot interval: a serving node takes the snapshot, node 1 cannot.
      for (let i = written.length + 1;; i++) {
        const position = await appendAt(n2, key, `v${i}`);
        written.push(`v${i}`);
        if (position >= EVERY + 5) break;
      }
      await until(
        "node 2 or 3 stores the regular snapshot",
        () => Promise.resolve(STORED.test(n2.output() + n3.output())),
        60_000,
      );
      const stored = Number((n2.output() + n3.output()).match(STORED)![1]);
      assert.ok(stored >= EVERY, `snapshot at ${stored}`);
      assert.doesNotMatch(
        n2.output() + n3.output(),
        /asked_for=/,
        "the regular snapshot, not one asked for",
      );
      assert.ok(!STORED.test(n1.output()), "the stopped owner took none");

      // The snapshot ends node 1's hold: it rebuilds from it and holds every acknowledged write.
      await until("node 1 rebuilds from the snapshot", () => {
        const replaced = [...n1.output().matchAll(REPLACED)].map((m) => Number(m[1]));
        return Promise.resolve(replaced.some((p) => p >= stored));
      }, 60_000);
      await until("node 1 takes writes again", async () => (await readyStatus(n1)) === 200, 60_000);
      await appendAt(n1, key, "after");
      written.push("after");
      await until("node 1 holds node 2's object", async () => {
        const [a, b] = await Promise.all([call(n2, "GET", path(key)), call(n1, "GET", path(key))]);
        return JSON.stringify(a.body) === JSON.stringify(b.body);
      });
      assert.deepEqual(
        (await call(n1, "GET", path(key))).body.state.l,
        written,
        "every acknowledged write, in order, on node 1",
      );
    } finally {
      await cluster.stop();
    }
  },
});
