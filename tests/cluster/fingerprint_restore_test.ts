// The fingerprint a restarted node rebuilds from its store (lib/cluster/divergence/history.ts): only
// the positions whose whole window the store kept are known; before them the rebuilt
// fingerprints would lack older positions and differ from the other nodes' (a restarted node
// then took a message speculated a few positions before its restart point for one written on
// another history, skipped it alone, and stopped itself as diverged: seen in the nemesis).
import assert from "node:assert/strict";
import { positionDigest, WindowFingerprint } from "../../lib/cluster/divergence/history.ts";

Deno.test("fingerprint: a rebuilt window knows no fingerprint before its first complete position", () => {
  const live = new WindowFingerprint(8);
  for (let seq = 1; seq <= 40; seq++) live.add(seq, positionDigest(`b${seq}`, seq % 3 !== 0));
  // The store keeps the last `window` positions: 33..40.
  const stored: [number, string][] = [];
  for (let seq = 33; seq <= 40; seq++) stored.push([seq, positionDigest(`b${seq}`, seq % 3 !== 0)]);
  const rebuilt = new WindowFingerprint(8, stored);
  for (let seq = 33; seq < 40; seq++) {
    assert.equal(rebuilt.at(seq), undefined, `position ${seq} is not known`);
  }
  assert.equal(rebuilt.at(40), live.at(40));
  assert.equal(
    rebuilt.add(41, positionDigest("b41", true)),
    live.add(41, positionDigest("b41", true)),
  );
  // A store that starts at position 1 holds every window whole.
  const fromStart = new WindowFingerprint(8, stored.map(([s, d]) => [s - 32, d]));
  assert.notEqual(fromStart.at(1), undefined);
});
