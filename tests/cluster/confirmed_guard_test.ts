// A node that stopped itself never rebuilds onto a log that lost history a majority confirmed
// (lib/cluster/divergence/guard.ts). Node 3 is fed another message at one position (the fault
// hook SWITCHBOARD_FAULT_FORK_AT) and stops; from then on it reads yet another message at an
// earlier position, one a majority confirmed long before (SWITCHBOARD_FAULT_OTHER_AT, as from a
// stream leader whose replica diverged there). It then keeps its store: it refuses the rebuild,
// says why on /readyz and to writers (503), holds every acknowledged write, and does so again
// when restarted (the confirmed position is kept in its store). Restarted once the log agrees
// with its confirmed history, it rebuilds and ends equal to the majority. The healthy nodes
// ignore its requests for a snapshot here (see asked_snapshot_test.ts for those).
import assert from "node:assert/strict";
import { call } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { NO_ASKED_SNAPSHOT, startForkedCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";
import {
  CHAIN_CHECKPOINT_EVERY,
  firstConfirmedMismatch,
  type KeptHistory,
  type PositionRecord,
} from "../../lib/cluster/divergence/guard.ts";
import { CHAIN_START, chainDigest } from "../../lib/cluster/divergence/history.ts";

/** Positions start at 1; every write of this test before the fork is one position (after it,
 * the healthy nodes' epoch renewal of the stream node 3 named takes positions too). */
const FORK_AT = 40;
const OTHER_AT = 20;
const REFUSED = new RegExp(
  `the log no longer holds writes a majority confirmed \\(position ${OTHER_AT}\\)`,
);
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
  assert.match(
    node.output(),
    /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed/,
  );
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
  name:
    "cluster guard: a stopped node never rebuilds onto a log that lost confirmed history, and rebuilds once it agrees",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let faults = true;
    // Node 3's faults are read at each (re)start: the last restart runs without them.
    const cluster = await startForkedCluster(
      (): Record<string, string> =>
        faults
          ? {
            SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
            SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT),
          }
          : {},
      NO_ASKED_SNAPSHOT,
    );
    try {
      const [n1] = cluster.nodes;
      // Written through node 1 until the log is past the fork; value -> its acked position.
      const written = new Map<string, number>();
      for (let i = 1;; i++) {
        const position = await appendAt(n1, KEY, `v${i}`);
        written.set(`v${i}`, position);
        if (position < FORK_AT) {
          assert.equal(position, i, "every write of this test before the fork is one position");
        }
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
      await until(
        "node 3 rebuilds its store",
        () => Promise.resolve(/cluster store replaced/.test(n3.output())),
        60_000,
      );
      await until(
        "node 3 takes writes again",
        async () => (await readyz(n3)).status === 200,
        60_000,
      );
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
      [...written.keys()].forEach((value, i) =>
        assert.equal(list[i], value, `acknowledged ${value} in order`)
      );
    } finally {
      await cluster.stop();
    }
  },
});

// The same, with the confirmed history lost long before the positions the store keeps a record
// of (its last 4096): node 3 is fed another message at a position past 4096 and, once stopped,
// reads yet another one at position 20. Only the chained digest (kept with each record and
// every 4096 positions) sees it.
const LONG_FORK_AT = CHAIN_CHECKPOINT_EVERY + 300;
const LONG_REFUSED =
  /the log no longer holds writes a majority confirmed \(at or before position (\d+)\)/;

Deno.test({
  name:
    "cluster guard: a lost write older than the 4096 positions a store keeps a record of is refused too",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cluster = await startForkedCluster({
      SWITCHBOARD_FAULT_FORK_AT: String(LONG_FORK_AT),
      SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT),
    }, NO_ASKED_SNAPSHOT);
    try {
      const [n1] = cluster.nodes;
      // Small objects: each write appends to one of 64 lists; key -> [value, acked position].
      const written = new Map<string, [string, number][]>();
      for (let i = 1;; i++) {
        const key = `long-${i % 64}`;
        const position = await appendAt(n1, key, `v${i}`);
        written.set(key, [...(written.get(key) ?? []), [`v${i}`, position]]);
        if (position >= LONG_FORK_AT + 2) break;
      }
      const n3 = cluster.nodes[2];
      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())), 60_000);
      await until("node 3 refuses to rebuild, with the reason on /readyz", async () => {
        const r = await readyz(n3);
        return r.status === 503 && LONG_REFUSED.test(r.reason ?? "");
      }, 60_000);
      const at = Number(LONG_REFUSED.exec(n3.output())?.[1]);
      assert.ok(at > OTHER_AT && at <= LONG_FORK_AT, `refused by the digest at ${at}`);
      assert.match(
        n3.output(),
        /ERROR +cluster unavailable: the log no longer holds writes a majority confirmed/,
      );
      const write = await call(n3, "POST", `${path("long-1")}/append`, {
        slot: "l",
        value: "refused",
      });
      assert.equal(write.status, 503);
      assert.doesNotMatch(n3.output(), /cluster store replaced/);
      // Every acknowledged write before the fork is still where it was, on node 3.
      for (const [key, values] of written) {
        const list: string[] = (await call(n3, "GET", path(key))).body.state.l;
        const before = values.filter(([, position]) => position < LONG_FORK_AT).map(([v]) => v);
        assert.deepEqual(list.slice(0, before.length), before, `${key} kept on node 3`);
      }
    } finally {
      await cluster.stop();
    }
  },
});

/**
 * One side's kept history of positions 1..`to` with batch ids `b<seq>` (`odd` positions hold
 * another one): records of `keepFrom..to` with their chained digests (`chained`: false for a
 * store written before the digest), and the digests every `CHAIN_CHECKPOINT_EVERY` positions.
 */
function history(
  to: number,
  { odd = [] as number[], keepFrom = 1, chained = true } = {},
): KeptHistory {
  const records = new Map<number, PositionRecord>();
  const checkpoints = new Map<number, string>();
  let chain = CHAIN_START;
  for (let seq = 1; seq <= to; seq++) {
    const b = odd.includes(seq) ? `other-${seq}` : `b${seq}`;
    chain = chainDigest(chain, seq, b);
    if (seq >= keepFrom) records.set(seq, chained ? { b, c: chain } : { b });
    if (chained && seq % CHAIN_CHECKPOINT_EVERY === 0) checkpoints.set(seq, chain);
  }
  return { records, checkpoints };
}

/** The log's batch ids of 1..`to` (`odd` positions hold another one). */
function log(to: number, odd: number[] = []): Map<number, string> {
  return new Map(
    Array.from(
      { length: to },
      (_, i) => [i + 1, odd.includes(i + 1) ? `other-${i + 1}` : `b${i + 1}`],
    ),
  );
}

/** The source's records only from `from` on (a snapshot keeps its last positions). */
function recent(h: KeptHistory, from: number): KeptHistory {
  return {
    records: new Map([...h.records].filter(([s]) => s >= from)),
    checkpoints: h.checkpoints,
  };
}

const none: KeptHistory = { records: new Map(), checkpoints: new Map() };

Deno.test("cluster guard: the confirmed positions are compared with the snapshot's records and the log, never the unconfirmed suffix", async () => {
  const mine = history(100, { odd: [90] }); // the node's own other message at 90, unconfirmed
  const check = (l: Map<number, string>, sourcePosition = 0, source = none) =>
    firstConfirmedMismatch({
      confirmed: 80,
      mine,
      sourcePosition,
      source,
      read: (seq) => Promise.resolve(l.get(seq)),
    });
  // The log agrees up to the confirmed position: the rebuild may proceed.
  assert.equal(await check(log(100)), undefined);
  // Another message at a confirmed position, or none there: refused.
  assert.deepEqual(await check(log(100, [20])), { seq: 20, mine: "b20", theirs: "other-20" });
  assert.deepEqual(await check(log(50)), { seq: 51, mine: "b51", theirs: undefined });
  // A snapshot at 60 whose own records differ at a confirmed position: refused, whatever the log.
  assert.deepEqual(await check(log(100), 60, recent(history(60, { odd: [45] }), 40)), {
    seq: 45,
    mine: "b45",
    theirs: "other-45",
  });
  // Positions the snapshot reaches are not read from the log.
  assert.equal(await check(log(100, [30]), 60, recent(history(60), 40)), undefined);
  // A snapshot past the confirmed position: only its history up to there counts.
  assert.equal(await check(log(100), 95, history(95, { odd: [85] })), undefined);
  // Nothing confirmed: nothing to compare.
  assert.equal(
    await firstConfirmedMismatch({
      confirmed: 0,
      mine,
      sourcePosition: 0,
      source: none,
      read: () => Promise.resolve(undefined),
    }),
    undefined,
  );
});

Deno.test("cluster guard: a difference older than the positions the stores keep a record of is refused by the chained digest", async () => {
  const to = 2 * CHAIN_CHECKPOINT_EVERY + 1000;
  const confirmed = to - 10;
  // The old store keeps records of its last CHAIN_CHECKPOINT_EVERY positions only.
  const mine = history(to, { keepFrom: to - CHAIN_CHECKPOINT_EVERY + 1 });
  const check = (l: Map<number, string>, sourcePosition = 0, source = none) =>
    firstConfirmedMismatch({
      confirmed,
      mine,
      sourcePosition,
      source,
      read: (seq) => Promise.resolve(l.get(seq)),
    });
  const firstKept = to - CHAIN_CHECKPOINT_EVERY + 1;
  // Rebuilt from the whole log: another message at 20, long before the records.
  assert.deepEqual(await check(log(to, [20])), {
    seq: CHAIN_CHECKPOINT_EVERY,
    mine: mine.checkpoints.get(CHAIN_CHECKPOINT_EVERY),
    theirs: history(CHAIN_CHECKPOINT_EVERY, { odd: [20] }).checkpoints.get(CHAIN_CHECKPOINT_EVERY),
    chained: true,
    after: 0,
  });
  assert.equal(await check(log(to)), undefined);
  // From a snapshot before the records whose history differs at 20: its digest at its position.
  const snapshotAt = firstKept - 500;
  const snap = recent(history(snapshotAt, { odd: [20] }), snapshotAt - CHAIN_CHECKPOINT_EVERY + 1);
  const refused = await check(log(to), snapshotAt, snap);
  assert.equal(refused?.chained, true);
  assert.ok(refused!.seq <= firstKept, `refused at ${refused?.seq}`);
  assert.equal(
    await check(
      log(to),
      snapshotAt,
      recent(history(snapshotAt), snapshotAt - CHAIN_CHECKPOINT_EVERY + 1),
    ),
    undefined,
  );
  // From a snapshot past the confirmed position (taken while the node was stopped): compared
  // at the last position both keep a digest of.
  const later = to + 3 * CHAIN_CHECKPOINT_EVERY;
  const past = await check(
    log(later),
    later,
    recent(history(later, { odd: [20] }), later - CHAIN_CHECKPOINT_EVERY + 1),
  );
  assert.deepEqual(past?.seq, 2 * CHAIN_CHECKPOINT_EVERY);
  assert.equal(
    await check(log(later), later, recent(history(later), later - CHAIN_CHECKPOINT_EVERY + 1)),
    undefined,
  );
  // Stores written before the digest: the records alone, as before (the old difference unseen).
  const unchained = history(to, { keepFrom: firstKept, chained: false });
  const oldOther = log(to, [20]);
  const keptOther = log(to, [firstKept]);
  assert.equal(
    await firstConfirmedMismatch({
      confirmed,
      mine: unchained,
      sourcePosition: 0,
      source: none,
      read: (seq) => Promise.resolve(oldOther.get(seq)),
    }),
    undefined,
  );
  assert.deepEqual(
    await firstConfirmedMismatch({
      confirmed,
      mine: unchained,
      sourcePosition: 0,
      source: none,
      read: (seq) => Promise.resolve(keptOther.get(seq)),
    }),
    { seq: firstKept, mine: `b${firstKept}`, theirs: `other-${firstKept}` },
  );
});

Deno.test("cluster guard: a difference before the oldest record kept is named as lying at or before the position below it, not at the record", async () => {
  // As in run G1: the old store keeps records from `firstKept` on and a checkpoint at 4096; the
  // log holds other batches from `shifted` on (between the checkpoint and the oldest record),
  // so the oldest record differs too, but it is not where the histories part.
  const to = CHAIN_CHECKPOINT_EVERY + 900;
  const firstKept = CHAIN_CHECKPOINT_EVERY + 500;
  const shifted = CHAIN_CHECKPOINT_EVERY + 160;
  const mine = history(to, { keepFrom: firstKept });
  const odd = Array.from({ length: to - shifted + 1 }, (_, i) => shifted + i);
  const check = (l: Map<number, string>, sourcePosition = 0, source = none) =>
    firstConfirmedMismatch({
      confirmed: to - 10,
      mine,
      sourcePosition,
      source,
      read: (seq) => Promise.resolve(l.get(seq)),
    });
  const refused = await check(log(to, odd));
  assert.equal(refused?.chained, true, "seen by the digest");
  assert.equal(refused?.seq, firstKept - 1, "at or before the position below the oldest record");
  // The digests were last seen equal at the checkpoint: the difference lies between the two.
  assert.equal(refused?.after, CHAIN_CHECKPOINT_EVERY);
  assert.ok(refused!.after! < shifted && shifted <= refused!.seq);
  // A difference exactly at the oldest record is named there, as a position.
  assert.deepEqual(await check(log(to, [firstKept])), {
    seq: firstKept,
    mine: `b${firstKept}`,
    theirs: `other-${firstKept}`,
  });
  // The same from a snapshot whose records reach before the oldest record kept: its digest
  // below that record shows the earlier difference too.
  const snapshotAt = firstKept + 100;
  const snap = recent(
    history(snapshotAt, { odd: odd.filter((s) => s <= snapshotAt) }),
    shifted - 50,
  );
  const fromSnapshot = await check(log(to), snapshotAt, snap);
  assert.equal(fromSnapshot?.chained, true);
  assert.equal(fromSnapshot?.seq, firstKept - 1);
  assert.deepEqual(
    await check(
      log(to),
      snapshotAt,
      recent(history(snapshotAt, { odd: [firstKept] }), shifted - 50),
    ),
    { seq: firstKept, mine: `b${firstKept}`, theirs: `other-${firstKept}` },
  );
});
