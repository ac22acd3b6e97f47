// A node that stopped itself never rebuilds onto a log that lost history a majority confirmed
// (lib/cluster/confirmed_guard.ts). Node 3 is fed another message at one position (the fault
// hook SWITCHBOARD_FAULT_FORK_AT) and stops; from then on it reads yet another message at an
// earlier position, one a majority confirmed long before (SWITCHBOARD_FAULT_OTHER_AT, as from a
// stream leader whose replica diverged there). It then keeps its store: it refuses the rebuild,
// says why on /readyz and to writers (503), holds every acknowledged write, and does so again
// when restarted (the confirmed position is kept in its store). Restarted once the log agrees
// with its confirmed history, it rebuilds and ends equal to the majority.
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { startCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";
import { firstConfirmedMismatch } from "../../lib/cluster/confirmed_guard.ts";

/** Positions start at 1; every write of this test is one position. */
const FORK_AT = 40;
const OTHER_AT = 20;
const REFUSED = new RegExp(`the log no longer holds writes a majority confirmed \\(position ${OTHER_AT}\\)`);
const STOPPED = /applied the log differently from a majority of the nodes/;
const KEY = "guarded";

/** /readyz of `node`: its status and reason. */
async function readyz(node: TestServer): Promise<{ status: number; reason?: string }> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  const body = await r.json();
  return { status: r.status, reason: body.reason };
}

/** Asserts `node` refuses the rebuild: /readyz and writes answer 503 with the reason, its store
 * was never replaced, and it holds every value written before `FORK_AT` where it was acked. */
async function assertKeptStore(node: TestServer, written: Map<string, number>) {
  await until("the node refuses to rebuild, with the reason on /readyz", async () => {
    const r = await readyz(node);
    return r.status === 503 && REFUSED.test(r.reason ?? "");
  }, 60_000);
  assert.match(node.output(), /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed/);
  assert.match(node.output(), /the store is kept for an operator/);
  const write = await call(node, "POST", `${path(KEY)}/append`, { slot: "l", value: "refused" });
  assert.equal(write.status, 503);
  assert.match(JSON.stringify(write.body), REFUSED);
  assert.doesNotMatch(node.output(), /cluster store replaced/);
  const held = await call(node, "GET", path(KEY));
  const list: string[] = held.body.state.l;
  let checked = 0;
  for (const [value, position] of written) {
    if (position >= FORK_AT) continue;
    assert.equal(list[position - 1], value, `acknowledged ${value} kept at position ${position}`);
    checked++;
  }
  assert.ok(checked >= OTHER_AT, "the positions up to the other message were compared");
}

Deno.test({
  name: "cluster guard: a stopped node never rebuilds onto a log that lost confirmed history, and rebuilds once it agrees",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let faults = true;
    const cluster = await startCluster({
      env: { SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300", SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000" },
      nodeEnv: (i): Record<string, string> =>
        i === 2 && faults ? { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT), SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) } : {},
    });
    try {
      const [n1] = cluster.nodes;
      // Written through node 1 until the log is past the fork; value -> its acked position.
      const written = new Map<string, number>();
      for (let i = 1;; i++) {
        const position = await appendAt(n1, KEY, `v${i}`);
        written.set(`v${i}`, position);
        assert.equal(position, i, "every write of this test is one position");
        if (position >= FORK_AT + 2) break;
      }
      let n3 = cluster.nodes[2];
      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
      await assertKeptStore(n3, written);

      // Killed and started again while the log still disagrees: refused again, before and
      // after it listens (its store kept the confirmed position).
      await cluster.kill(2);
      n3 = await cluster.restart(2);
      assert.match(n3.output(), /cluster store marked diverged; rebuilding it before serving/);
      await assertKeptStore(n3, written);
      // It listens stopped, and says so: it caught up with nothing.
      assert.doesNotMatch(n3.output(), /cluster log caught up/);
      assert.match(n3.output(), /cluster node serving stopped: its store was not rebuilt/);

      // The log agrees with its confirmed history again: it rebuilds and ends equal to the
      // majority, every acknowledged write where it was acked.
      await cluster.kill(2);
      faults = false;
      n3 = await cluster.restart(2);
      await until("node 3 rebuilds its store", () => Promise.resolve(/cluster store replaced/.test(n3.output())), 60_000);
      await until("node 3 takes writes again", async () => (await readyz(n3)).status === 200, 60_000);
      assert.match(n3.output(), /cluster log caught up/);
      // Its diverged mark still named the refusal; the check passed this time.
      assert.doesNotMatch(n3.output(), /ERROR +cluster unavailable: the log no longer holds/);
      await appendAt(n3, KEY, "after");
      await until("node 3 holds the majority's object", async () => {
        const [a, b] = await Promise.all([call(n1, "GET", path(KEY)), call(n3, "GET", path(KEY))]);
        return JSON.stringify(a.body) === JSON.stringify(b.body);
      });
      const list: string[] = (await call(n3, "GET", path(KEY))).body.state.l;
      assert.deepEqual(list.slice(written.size), ["after"]);
      for (const [value, at] of written) assert.equal(list[at - 1], value, `acknowledged ${value} at ${at}`);
    } finally {
      await cluster.stop();
    }
  },
});

/** Batch ids `b<seq>` for `from..to`, with `odd` positions holding another one. */
function records(from: number, to: number, odd: number[] = []): Map<number, string> {
  const out = new Map<number, string>();
  for (let seq = from; seq <= to; seq++) out.set(seq, odd.includes(seq) ? `other-${seq}` : `b${seq}`);
  return out;
}

Deno.test("cluster guard: the confirmed positions are compared with the snapshot's records and the log, never the unconfirmed suffix", async () => {
  const mine = records(1, 100, [90]); // the node's own other message at 90, unconfirmed
  const check = (log: Map<number, string>, sourcePosition = 0, source = new Map<number, string>()) =>
    firstConfirmedMismatch({ confirmed: 80, mine, sourcePosition, source, read: (seq) => Promise.resolve(log.get(seq)) });
  // The log agrees up to the confirmed position: the rebuild may proceed.
  assert.equal(await check(records(1, 100)), undefined);
  // Another message at a confirmed position, or none there: refused.
  assert.deepEqual(await check(records(1, 100, [20])), { seq: 20, mine: "b20", theirs: "other-20" });
  assert.deepEqual(await check(records(1, 50)), { seq: 51, mine: "b51", theirs: undefined });
  // A snapshot at 60 whose own records differ at a confirmed position: refused, whatever the log.
  assert.deepEqual(await check(records(1, 100), 60, records(40, 60, [45])), { seq: 45, mine: "b45", theirs: "other-45" });
  // Positions the snapshot reaches are not read from the log.
  assert.equal(await check(records(1, 100, [30]), 60, records(40, 60)), undefined);
  // A snapshot past the confirmed position: only its records up to there count.
  assert.equal(await check(records(1, 100), 95, records(1, 95, [85])), undefined);
  // Nothing confirmed: nothing to compare.
  assert.equal(await firstConfirmedMismatch({ confirmed: 0, mine, sourcePosition: 0, source: new Map(), read: () => Promise.resolve(undefined) }), undefined);
});
