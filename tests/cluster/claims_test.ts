// The judging of other nodes' claims of what a majority confirmed (lib/cluster/divergence/history.ts):
// learned when the claimed digest is this node's, contradicted when it is not, waited for when
// this node has not applied that far, dropped when it keeps no digest there, and forgotten
// with a replaced store.
import assert from "node:assert/strict";
import { ConfirmedClaims } from "../../lib/cluster/divergence/history.ts";

/** Claims judged against a history whose digest at position p is `h<p>` (from `kept` on),
 * applied up to `applied.at`. */
function history(kept = 1) {
  const applied = { at: 100 };
  const claims = new ConfirmedClaims(
    (seq) => (seq >= kept && seq <= applied.at ? `h${seq}` : undefined),
    () => applied.at,
  );
  return { claims, applied };
}

Deno.test("claims: a claim matching this node's digest is learned, only ever upwards; one that differs is contradicted", () => {
  const { claims } = history();
  assert.deepEqual(claims.hear("b", { at: 60, chain: "h60" }), { kind: "learned", at: 60 });
  assert.equal(claims.learned, 60);
  assert.equal(
    claims.hear("c", { at: 50, chain: "h50" }),
    undefined,
    "a lower claim teaches nothing",
  );
  assert.equal(claims.learned, 60);
  assert.deepEqual(claims.hear("c", { at: 70, chain: "other" }), {
    kind: "contradicted",
    at: 70,
    node: "c",
  });
  assert.equal(claims.learned, 60, "a contradiction teaches nothing");
});

Deno.test("claims: a claim past the position applied waits until it is reached; the latest per node counts", () => {
  const { claims, applied } = history();
  assert.equal(claims.hear("b", { at: 120, chain: "h120" }), undefined);
  assert.equal(claims.hear("c", { at: 130, chain: "x" }), undefined);
  assert.equal(
    claims.hear("c", { at: 140, chain: "h140" }),
    undefined,
    "replaces c's earlier claim",
  );
  applied.at = 125;
  assert.deepEqual(claims.reached(), [{ kind: "learned", at: 120 }]);
  assert.deepEqual(claims.reached(), [], "judged once");
  applied.at = 150;
  assert.deepEqual(
    claims.reached(),
    [{ kind: "learned", at: 140 }],
    "c's 130 was replaced, so never contradicts",
  );
});

Deno.test("claims: a position whose digest is no longer kept is not judged; a reset forgets what was learned and waits", () => {
  const { claims, applied } = history(50);
  assert.equal(claims.hear("b", { at: 40, chain: "anything" }), undefined);
  assert.equal(claims.hear("b", { at: 0, chain: "h0" }), undefined);
  assert.deepEqual(claims.hear("b", { at: 80, chain: "h80" }), { kind: "learned", at: 80 });
  assert.equal(claims.hear("c", { at: 200, chain: "h200" }), undefined);
  claims.reset();
  assert.equal(claims.learned, 0);
  applied.at = 300;
  assert.deepEqual(claims.reached(), [], "the waiting claim was dropped with the store");
});
