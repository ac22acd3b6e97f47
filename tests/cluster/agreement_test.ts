// The nodes' agreement on how they applied the log (issue 35: a NATS replica that diverged fed
// one node other messages): the window fingerprint, and the peer checks that hold an
// acknowledgement until a majority applied the log alike and stop a node a majority disagrees with.
import assert from "node:assert/strict";
import { positionDigest, WindowFingerprint } from "../../lib/cluster/divergence/history.ts";
import { PeerAgreement } from "../../lib/cluster/divergence/agreement.ts";

const batches = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => [from + i, `b${from + i}`] as const);

Deno.test("fingerprint: alike for the same history, different for a window after one other message", () => {
  const a = new WindowFingerprint(8);
  const b = new WindowFingerprint(8);
  for (const [seq, batch] of batches(1, 30)) {
    const pa = a.add(seq, positionDigest(batch, true));
    // b read another message at 10 (a diverged replica), then the same ones again.
    const pb = b.add(seq, positionDigest(seq === 10 ? "other" : batch, true));
    if (seq < 10 || seq >= 18) assert.equal(pa, pb, `position ${seq}`);
    else assert.notEqual(pa, pb, `position ${seq}`);
  }
  // Applied or skipped counts too.
  const c = new WindowFingerprint(8);
  const d = new WindowFingerprint(8);
  for (const [seq, batch] of batches(1, 22)) {
    const pc = c.add(seq, positionDigest(batch, seq !== 20));
    const pd = d.add(seq, positionDigest(batch, true));
    assert.equal(pc === pd, seq < 20, `position ${seq}`);
  }
});

Deno.test("fingerprint: rebuilt from the stored window after a restart, and rolled back", () => {
  const a = new WindowFingerprint(8);
  for (const [seq, batch] of batches(1, 40)) a.add(seq, positionDigest(batch, true));
  // A restarted node keeps the last `window` positions.
  const restarted = new WindowFingerprint(
    8,
    batches(33, 40).map(([s, b]) => [s, positionDigest(b, true)]),
  );
  assert.equal(restarted.at(40), a.at(40));
  assert.equal(
    restarted.add(41, positionDigest("b41", true)),
    a.add(41, positionDigest("b41", true)),
  );
  // A failed commit of 42-44 is rolled back, then applied again with other content.
  const at41 = a.at(41);
  a.add(42, "x");
  a.add(43, "y");
  a.rollback(41);
  assert.equal(a.at(42), undefined);
  assert.equal(
    a.add(42, positionDigest("b42", true)),
    restarted.add(42, positionDigest("b42", true)),
  );
  assert.equal(a.at(41), at41);
});

/** Three nodes' fingerprints, where `node-3` read another message at position 5. */
function prints() {
  const fp = {
    "node-1": new WindowFingerprint(64),
    "node-2": new WindowFingerprint(64),
    "node-3": new WindowFingerprint(64),
  };
  for (const [seq, batch] of batches(1, 10)) {
    for (const [node, f] of Object.entries(fp)) {
      f.add(seq, positionDigest(node === "node-3" && seq === 5 ? "other" : batch, true));
    }
  }
  return fp;
}

Deno.test("agreement: an acknowledgement waits for a majority of the members", async () => {
  const fp = prints();
  const live = ["node-1", "node-2", "node-3"];
  const diverged: number[] = [];
  const me = new PeerAgreement("node-1", (s) => fp["node-1"].at(s), (s) => diverged.push(s));
  me.useMembers(() => live);
  assert.equal(me.needed(), 1);
  me.applied(10);
  // node-3's report disagrees: no confirmation from it.
  me.report("node-3", 6, fp["node-3"].at(6)!);
  assert.equal(await me.wait(6, Date.now() + 50), false);
  // node-2 agrees up to 8: positions up to 8 are confirmed, 9 is not yet.
  me.report("node-2", 8, fp["node-2"].at(8)!);
  assert.equal(await me.wait(6, Date.now() + 50), true);
  assert.equal(await me.wait(9, Date.now() + 50), false);
  // A report past what this node applied is judged once it gets there.
  const waiting = me.wait(10, Date.now() + 2000);
  me.report("node-2", 10, fp["node-2"].at(10)!);
  assert.equal(await waiting, true);
  assert.equal(diverged.length, 0, "one peer agrees: this node is not the odd one");
  // Peers heard from still count once the membership forgets them (cut off, not gone).
  live.splice(1);
  assert.equal(me.needed(), 1);
  // The only member needs no one.
  const alone = new PeerAgreement("solo", () => undefined, () => {});
  alone.useMembers(() => ["solo"]);
  assert.equal(alone.needed(), 0);
  assert.equal(await alone.wait(1000, Date.now()), true);
});

Deno.test("agreement: the node a majority disagrees with stops and never acknowledges", async () => {
  const fp = prints();
  const live = ["node-1", "node-2", "node-3"];
  const stopped: string[] = [];
  const odd = new PeerAgreement(
    "node-3",
    (s) => fp["node-3"].at(s),
    (s, peers) => stopped.push(`${s} ${peers.join(",")}`),
  );
  odd.useMembers(() => live);
  odd.applied(10);
  odd.report("node-1", 7, fp["node-1"].at(7)!);
  assert.equal(stopped.length, 0, "node-2 has not reported yet");
  odd.report("node-2", 7, fp["node-2"].at(7)!);
  assert.deepEqual(stopped, ["7 node-1,node-2"]);

  // node-1 with node-3 diverged (and saying so) and node-2 cut off: node-2 still counts as a
  // member, so node-1 alone is no majority: it acknowledges nothing, and does not stop either.
  const one = new PeerAgreement("node-1", (s) => fp["node-1"].at(s), () => stopped.push("node-1"));
  one.useMembers(() => ["node-1", "node-2", "node-3"]);
  one.applied(10);
  one.report("node-3", 10, fp["node-3"].at(10)!, true);
  assert.equal(one.needed(), 1);
  assert.equal(await one.wait(10, Date.now() + 50), false);
  assert.deepEqual(stopped, ["7 node-1,node-2"]);
  // node-2 is back and agrees: acknowledged.
  one.report("node-2", 10, fp["node-2"].at(10)!);
  assert.equal(await one.wait(10, Date.now() + 50), true);
  // A diverged node never acknowledges, even where a peer agrees.
  const waits = await odd.wait(1, Date.now() + 50);
  assert.equal(waits, false);
});
