// The agreement after a node that stopped itself rebuilt its store (docs/cluster-internals.md,
// "Nodes check each other's history"): it judges the peers' latest reports again against its
// rebuilt history and acknowledges once they agree; the others count it again once it reports
// without saying it diverged. And the last position a majority confirmed (where a stopped node's
// clients may start to hold another history).
import assert from "node:assert/strict";
import { positionDigest, WindowFingerprint } from "../../lib/cluster/divergence/history.ts";
import { PeerAgreement } from "../../lib/cluster/divergence/agreement.ts";

/** A history of `n` positions (`odd`: another message at position 5). */
function history(n: number, odd = false): WindowFingerprint {
  const f = new WindowFingerprint(64);
  for (let seq = 1; seq <= n; seq++) {
    f.add(seq, positionDigest(odd && seq === 5 ? "other" : `b${seq}`, true));
  }
  return f;
}

Deno.test("agreement reset: the rebuilt node is confirmed by the peers' latest reports, also with no new ones", async () => {
  const good = history(12);
  let mine = history(10, true);
  const stops: number[] = [];
  const node3 = new PeerAgreement("node-3", (s) => mine.at(s), (s) => stops.push(s));
  node3.useMembers(() => ["node-1", "node-2", "node-3"]);
  node3.applied(10);
  node3.report("node-1", 9, good.at(9)!);
  node3.report("node-2", 8, good.at(8)!);
  // node-1's latest report, past what node 3 applied.
  node3.report("node-1", 12, good.at(12)!);
  assert.equal(stops.length, 1, "stopped: both peers applied the log otherwise");
  assert.equal(node3.selfDiverged, true);
  assert.equal(await node3.wait(8, Date.now() + 20), false);

  // Rebuilt from the empty store: nothing applied yet, nothing confirmed.
  mine = new WindowFingerprint(64);
  node3.reset(0);
  assert.equal(node3.selfDiverged, false);
  const confirmed = node3.wait(12, Date.now() + 2000);
  for (let seq = 1; seq <= 12; seq++) {
    mine.add(seq, positionDigest(`b${seq}`, true));
    node3.applied(seq);
  }
  // node-1's last report (12) was kept across the reset: no new write is needed.
  assert.equal(await confirmed, true);
  assert.equal(stops.length, 1);
});

Deno.test("agreement reset: a peer that said it diverged counts again once it reports without it", async () => {
  const f = history(10);
  const node1 = new PeerAgreement(
    "node-1",
    (s) => f.at(s),
    () => assert.fail("node-1 never stops"),
  );
  node1.useMembers(() => ["node-1", "node-2", "node-3"]);
  node1.applied(10);
  node1.report("node-3", 10, f.at(10)!, true);
  assert.equal(await node1.wait(10, Date.now() + 20), false, "a diverged peer does not confirm");
  node1.report("node-3", 10, f.at(10)!);
  assert.equal(await node1.wait(10, Date.now() + 20), true, "rebuilt, it confirms again");
});

Deno.test("agreement: the last position a majority confirmed is where the history was last shared", () => {
  const good = history(12);
  const mine = history(10, true);
  const node3 = new PeerAgreement("node-3", (s) => mine.at(s), () => {});
  node3.useMembers(() => ["node-1", "node-2", "node-3"]);
  node3.applied(10);
  assert.equal(node3.confirmedUpTo(), 0, "no report yet");
  node3.report("node-1", 3, good.at(3)!);
  node3.report("node-2", 2, good.at(2)!);
  assert.equal(node3.confirmedUpTo(), 3, "one peer is enough with 3 members");
  // Past the fork (position 5) the peers disagree: the confirmed position stays before it.
  node3.report("node-1", 6, good.at(6)!);
  node3.report("node-2", 7, good.at(7)!);
  assert.equal(node3.confirmedUpTo(), 3);
  assert.equal(node3.selfDiverged, true);

  // With 5 members two peers must agree: the second highest counts; a diverged peer never.
  const f = history(10);
  const node1 = new PeerAgreement("node-1", (s) => f.at(s), () => {});
  node1.useMembers(() => ["node-1", "node-2", "node-3", "node-4", "node-5"]);
  node1.applied(10);
  node1.report("node-2", 9, f.at(9)!);
  node1.report("node-3", 6, f.at(6)!);
  node1.report("node-4", 4, f.at(4)!);
  node1.report("node-5", 10, f.at(10)!, true);
  assert.equal(node1.confirmedUpTo(), 6);
});
