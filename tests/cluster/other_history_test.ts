// Subscribers that were sent entries of another history: node 3 is fed another message at one
// log position (the fault hook SWITCHBOARD_FAULT_FORK_AT, as by a NATS stream replica that
// diverged; the hook changes the entry's text, so its subscriber gets an entry the majority
// never holds), publishes it to its subscriber, finds itself diverged and stops. The
// subscriber's position (log_id + epoch) then points past an entry that never existed: when
// it rejoins, on the rebuilt node 3, on another node, or on node 3 killed while stopped and
// started again, it gets a reset (a full snapshot), never a replay, and ends exactly equal to
// the majority's object. It then gets every later entry live, in order.
import assert from "node:assert/strict";
import { Socket } from "phoenix";
import { sdkFor } from "../pubsub/helpers.ts";
import type { TestServer } from "../helpers/server.ts";
import { type ObjectChange, ObjectSubscription } from "../../sdk/client/object_subscription.ts";
import { startForkedCluster, until } from "./cluster.ts";
import { appendAt as append, path } from "./writers.ts";

/** The log position node 3 is fed another message at (positions start at 1; every write of
 * this test is one position). */
const FORK_AT = 5;
const FORKED = " (forked)";
const STOPPED = /applied the log differently from a majority of the nodes/;
const HEALED = /cluster node rebuilt its store and takes writes again/;
/** The object as `node` holds it. */
async function objectOn(
  node: TestServer,
  key: string,
): Promise<{ state: Record<string, unknown>; log_id: number }> {
  const r = await fetch(`${node.baseUrl}${path(key)}`, { headers: node.headers(node.apps[0]) });
  return await r.json();
}

/** A subscriber of the test object on `node`, recording what it is told. */
function subscriber(node: TestServer, key: string) {
  const socket = new Socket(`ws://127.0.0.1:${node.port}/socket`, {
    params: { app_key: "key1" },
    reconnectAfterMs: () => 50,
  });
  const sb = sdkFor(node);
  const sub = new ObjectSubscription(
    socket,
    "key1",
    "ledger",
    key,
    async (socketId) => (await sb.authenticateObject(socketId, "ledger", key)).auth,
  );
  const changes: ObjectChange[] = [];
  sub.on("change", (c) => changes.push(c));
  socket.connect();
  return { sub, socket, changes };
}

/** Writes through node 1 until the log is past the forked position; the values written. */
async function writePastFork(n1: TestServer, key: string): Promise<string[]> {
  const values: string[] = [];
  for (let i = 1;; i++) {
    const value = `v${i}`;
    const position = await append(n1, key, value);
    values.push(value);
    assert.ok(
      i > 1 || position < FORK_AT,
      `the test's first write lands before position ${FORK_AT} (at ${position})`,
    );
    if (position >= FORK_AT + 2) return values;
  }
}

for (
  const where of [
    "on the rebuilt node",
    "on another node",
    "on the node restarted after a crash while stopped",
  ]
) {
  Deno.test({
    name:
      `cluster other history: a subscriber sent an entry the majority never held rejoins ${where} with a reset and ends exact`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const elsewhere = where === "on another node";
      const crash = where.includes("crash");
      const key = elsewhere ? "history-elsewhere" : crash ? "history-crash" : "history-rebuilt";
      // Elsewhere and crash: node 3 stays stopped (it would rebuild a second after it stops).
      const cluster = await startForkedCluster({
        SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT),
        ...(elsewhere || crash ? { SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS: "600000" } : {}),
      });
      let watch: ReturnType<typeof subscriber> | undefined;
      try {
        const [n1, , n3] = cluster.nodes;
        const moveTo = (node: TestServer) => {
          (watch!.socket as unknown as { endPoint: string }).endPoint =
            `ws://127.0.0.1:${node.port}/socket/websocket`;
        };
        watch = subscriber(n3, key);
        await watch.sub.whenSynced();
        const values = await writePastFork(n1, key);

        // The subscriber on node 3 was sent the forked entry, then node 3 stopped itself.
        await until(
          "the subscriber on node 3 got the forked entry",
          () =>
            Promise.resolve(
              watch!.changes.some((c) => c.type === "change" && String(c.value).endsWith(FORKED)),
            ),
        );
        await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
        assert.match(
          n1.output() + n3.output(),
          /streams whose subscribers may hold another history/,
        );
        const forkedAt = watch.sub.logId;
        assert.ok(
          (watch.sub.state.l as string[]).some((v) => v.endsWith(FORKED)),
          "its copy holds the forked entry",
        );

        if (elsewhere) {
          // It moves to node 1, resuming from its position there.
          moveTo(n1);
          watch.socket.disconnect(() => watch!.socket.connect());
        } else if (crash) {
          // Node 3 is killed; started again, it rebuilds its store before it listens, and the
          // subscriber (reconnecting meanwhile) resumes there, on its new port.
          await cluster.kill(2);
          const again = await cluster.restart(2);
          assert.match(
            again.output(),
            /cluster store marked diverged; rebuilding it before serving/,
          );
          assert.match(again.output(), /streams whose subscribers may hold another history/);
          moveTo(again);
          // The streams it listed when it stopped are still listed: it renews their epochs (or
          // finds them renewed by a node that heard its report).
          await until(
            "the restarted node 3 sees the epochs of the streams it named renewed",
            () =>
              Promise.resolve(
                /cluster (renewed|found) the epochs of the streams/.test(again.output()),
              ),
            30_000,
          );
        } else {
          // Node 3 rebuilds its store, closes its sockets, and the subscriber rejoins there.
          await until(
            "node 3 rebuilds its store",
            () => Promise.resolve(HEALED.test(n3.output())),
            60_000,
          );
        }
        const truth = await objectOn(n1, key);
        await until(
          "the subscriber rejoined with a reset",
          () =>
            Promise.resolve(
              watch!.changes.some((c) =>
                c.type === "snapshot" && c.reset === true && c.log_id >= forkedAt
              ),
            ),
          30_000,
        );
        await until(
          "the subscriber holds the majority's object",
          () => Promise.resolve(watch!.sub.logId >= truth.log_id),
          30_000,
        );
        assert.deepEqual(watch.sub.state, truth.state);
        assert.deepEqual(truth.state.l, values, "the majority holds what was written, unforked");

        // Later entries reach it live, every one, in order.
        const from = watch.changes.length;
        const more: string[] = [];
        for (let i = 1; i <= 8; i++) {
          more.push(`later${i}`);
          await append(n1, key, `later${i}`);
        }
        const final = await objectOn(n1, key);
        await until(
          "the subscriber got the later entries",
          () => Promise.resolve(watch!.sub.logId >= final.log_id),
          30_000,
        );
        const live = watch.changes.slice(from);
        assert.deepEqual(
          live.map((c) => c.type),
          more.map(() => "change"),
          "live, with no rejoin in between",
        );
        assert.deepEqual(live.map((c) => c.log_id), more.map((_, i) => truth.log_id + 1 + i));
        assert.deepEqual(watch.sub.state, final.state);
      } finally {
        watch?.socket.disconnect();
        await cluster.stop();
      }
    },
  });
}

// Past the window in which every node resets such a resume by itself (SWITCHBOARD_CLUSTER_UNSURE_MS,
// shortened here): the rebuilt node gave the streams it named a new epoch in one replicated
// write, so a subscriber that stayed away longer and resumes with its old cursor still gets a
// reset, in the new epoch, and ends equal to the majority.
Deno.test({
  name:
    "cluster other history: a subscriber away past the unsure window resumes with a reset into a new epoch and ends exact",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const key = "history-late";
    const UNSURE_MS = 1500;
    const cluster = await startForkedCluster(
      { SWITCHBOARD_FAULT_FORK_AT: String(FORK_AT) },
      { SWITCHBOARD_CLUSTER_UNSURE_MS: String(UNSURE_MS) },
    );
    let watch: ReturnType<typeof subscriber> | undefined;
    try {
      const [n1, , n3] = cluster.nodes;
      watch = subscriber(n3, key);
      await watch.sub.whenSynced();
      const oldEpoch = watch.sub.epoch;
      const values = await writePastFork(n1, key);
      await until(
        "the subscriber on node 3 got the forked entry",
        () =>
          Promise.resolve(
            watch!.changes.some((c) => c.type === "change" && String(c.value).endsWith(FORKED)),
          ),
      );
      // It goes away (its copy holds the forked entry) while node 3 stops itself and rebuilds.
      watch.socket.disconnect();
      await until("node 3 stops itself", () => Promise.resolve(STOPPED.test(n3.output())));
      const stoppedAt = Date.now();
      const forkedAt = watch.sub.logId;
      assert.ok(
        (watch.sub.state.l as string[]).some((v) => v.endsWith(FORKED)),
        "its copy holds the forked entry",
      );
      await until(
        "node 3 rebuilds its store",
        () => Promise.resolve(HEALED.test(n3.output())),
        60_000,
      );
      await until(
        "node 3 sees the epochs of the streams it named renewed (by itself or another node)",
        () =>
          Promise.resolve(/cluster (renewed|found) the epochs of the streams/.test(n3.output())),
        30_000,
      );
      // Past the window (it ended on every node at most UNSURE_MS after node 3 stopped).
      await new Promise((r) =>
        setTimeout(r, Math.max(0, stoppedAt + UNSURE_MS + 1000 - Date.now()))
      );

      // It comes back, to node 1, with its old cursor (log_id + epoch).
      (watch.socket as unknown as { endPoint: string }).endPoint =
        `ws://127.0.0.1:${n1.port}/socket/websocket`;
      const seen = watch.changes.length;
      watch.socket.connect();
      const truth = await objectOn(n1, key);
      await until(
        "the subscriber rejoined",
        () => Promise.resolve(watch!.changes.slice(seen).some((c) => c.type === "snapshot")),
        30_000,
      );
      const rejoin = watch.changes.slice(seen).find((c) => c.type === "snapshot")!;
      assert.equal(
        rejoin.type === "snapshot" && rejoin.reset,
        true,
        "a reset, not a replay of its old cursor",
      );
      assert.ok(rejoin.log_id >= forkedAt);
      assert.deepEqual(
        watch.changes.slice(seen).filter((c) => c.type === "change"),
        [],
        "nothing replayed",
      );
      assert.notEqual(watch.sub.epoch, oldEpoch, "into a new epoch");
      await until(
        "the subscriber holds the majority's object",
        () => Promise.resolve(watch!.sub.logId >= truth.log_id),
        30_000,
      );
      assert.deepEqual(watch.sub.state, truth.state);
      assert.deepEqual(truth.state.l, values, "the majority holds what was written, unforked");

      // Later entries reach it live, in order, in the new epoch.
      const from = watch.changes.length;
      for (let i = 1; i <= 4; i++) await append(n1, key, `later${i}`);
      const final = await objectOn(n1, key);
      await until(
        "the subscriber got the later entries",
        () => Promise.resolve(watch!.sub.logId >= final.log_id),
        30_000,
      );
      assert.deepEqual(watch.changes.slice(from).map((c) => c.type), [
        "change",
        "change",
        "change",
        "change",
      ]);
      assert.deepEqual(watch.sub.state, final.state);
    } finally {
      watch?.socket.disconnect();
      await cluster.stop();
    }
  },
});
