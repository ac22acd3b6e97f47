// A node that missed the others' reports learns from their heartbeats what a majority
// confirmed (lib/cluster/divergence/history.ts), so its rebuild guard keeps that history. Node 3 drops the
// others' reports of positions past 10 (SWITCHBOARD_FAULT_DEAF_AFTER: reports core NATS lost),
// so on its own it knows only position 10 as confirmed, while nodes 1 and 2 confirm every
// position. Node 3 is then fed another message at position 40 (FORK_AT); it hears no report
// showing it, and stops because the others' claims name a confirmed history that is not its
// own. Once stopped it reads yet another message at position 25 (OTHER_AT, a stream leader
// that rewrote confirmed history): its rebuild is refused, since the claims taught it that
// position 25 was confirmed (without them it would rebuild onto the rewritten log, as a node
// did in a nemesis run, bench/results/
// 2026-11-27-cluster-route-stall.md). It then rebuilds from a
// snapshot the others store on its request, and holds every acknowledged write in order.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import { readyStatus, startForkedCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const DEAF_AFTER = 10;
const OTHER_AT = 25;
const FORK_AT = 40;
const LEARNED = /cluster confirmed position learned from a heartbeat .*position=(\d+)/g;
const CONTRADICTED =
  /this node applied the log differently from a majority of the nodes \(the history node-\d says they confirmed\) by position/;
const REFUSED = new RegExp(
  `the log no longer holds writes a majority confirmed \\(position ${OTHER_AT}\\)`,
);
const REPLACED = /cluster store replaced .*position=(\d+)/g;

Deno.test({
  name:
    "claims: a node that missed the others' reports stops on their claims, and its guard keeps what they confirmed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const key = "claims";
    const cluster = await startForkedCluster({
      SWITCHBOARD_FAULT_DEAF_AFTER: String(DEAF_AFTER),
      SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
      SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT),
      LOG_LEVEL: "debug",
    });
    try {
      const [n1, n2, n3] = cluster.nodes;
      const written: string[] = [];
      const write = async () => {
        const value = `v${written.length + 1}`;
        const position = await appendAt(n1, key, value);
        written.push(value);
        return position;
      };
      // Up to a few positions before the fork: node 3 learns from a heartbeat that a position
      // past OTHER_AT is confirmed, which its own (dropped) reports never showed it.
      while ((await write()) < FORK_AT - 3);
      const learned = () =>
        Math.max(0, ...[...n3.output().matchAll(LEARNED)].map((m) => Number(m[1])));
      await until(
        "node 3 learns a confirmed position past OTHER_AT from a heartbeat",
        () => Promise.resolve(learned() > OTHER_AT),
        20_000,
      );
      assert.ok(
        !CONTRADICTED.test(n3.output()),
        `no claim contradicts node 3 before the fork:\n${
          n3.output().split("\n").filter((l) => /cluster/.test(l)).slice(-30).join("\n")
        }`,
      );

      // Past the fork: node 3 stops on the claims alone, and its rebuild is refused at OTHER_AT.
      while ((await write()) < FORK_AT + 3);
      await until(
        "node 3 stops on a claim",
        () => Promise.resolve(CONTRADICTED.test(n3.output())),
        30_000,
      );
      await until(
        "node 3's rebuild is refused at OTHER_AT",
        () => Promise.resolve(REFUSED.test(n3.output())),
        60_000,
      );
      assert.equal(
        [...n3.output().matchAll(REPLACED)].filter((m) => Number(m[1]) < OTHER_AT).length,
        0,
        "node 3 never rebuilt onto the log that lost position OTHER_AT",
      );

      // A healthy node stores the snapshot it asks for; node 3 rebuilds from it.
      await until("node 3 takes writes again", async () => (await readyStatus(n3)) === 200, 90_000);
      await appendAt(n3, key, "after");
      written.push("after");
      for (const node of [n1, n2, n3]) {
        await until("every node holds every acknowledged write in order", async () => {
          const r = await call(node, "GET", path(key));
          return JSON.stringify((r.body as { state: { l?: string[] } }).state.l) ===
            JSON.stringify(written);
        }, 30_000);
      }
    } finally {
      await cluster.stop();
    }
  },
});
