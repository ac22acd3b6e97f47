// A `switchboard cluster refound` that crashes part way, run again (lib/cluster/divergence/refound.ts,
// docs/cluster.md "When every node refuses to rebuild (operator)"). For each crash point of the
// fault hook SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER, on a cluster whose every node refuses to
// rebuild (refound_setup.ts, as in refound_test.ts) and is stopped:
// - `snapshot`: the run exits after the new snapshot is stored; the log stream is untouched;
// - `stream`: the run exits after the log stream is made again, empty at A + 1;
// in both the store is still marked diverged and the crashed run's lock file is left behind.
// The same command, run again without the hook, succeeds at the same position A (it does the
// whole: snapshot, stream, store); a third run refuses (the store is no longer marked diverged),
// changing nothing, which is also what a run that crashed after its last step leaves. The nodes,
// started as the docs say, take writes, and every write acknowledged before the fault is on
// every node.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { connect } from "nats";
import { SNAPSHOT_BUCKET, SNAPSHOT_OBJECT } from "../../lib/cluster/divergence/rebuild.ts";
import { FAULT_EXIT_CODE } from "../../lib/cluster/divergence/refound.ts";
import { LOCK_FILE } from "../../lib/store/lock.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { cli, logState, startAfterRefound, startRefusingCluster } from "./refound_setup.ts";

/** The snapshot objects in the bucket: name -> description (the position). */
async function snapshots(urls: string[]): Promise<Map<string, string>> {
  const nc = await connect({ servers: urls });
  try {
    const objects = await nc.jetstream().views.os(SNAPSHOT_BUCKET);
    return new Map((await objects.list()).map((o) => [o.name, o.description ?? ""]));
  } finally {
    await nc.close();
  }
}

for (const step of ["snapshot", "stream"] as const) {
  Deno.test({
    name: `cluster refound: a run that crashes after the ${step} step, run again, does the whole`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const { cluster, written } = await startRefusingCluster();
      try {
        const dirs = cluster.nodes.map((n) => n.dataDir);
        const urls = cluster.nats.urls;
        for (const node of cluster.nodes) await node.stop();
        const status = await cli(["status", "--data-dir", ...dirs]);
        assert.equal(status.code, 0, status.out);
        const chosen = /re-found on: (\S+) \(holds/.exec(status.out)?.[1];
        assert.ok(chosen && chosen !== dirs[2], status.out);
        const others = dirs.filter((d) => d !== chosen);
        const chosenStatus = async () => (await cli(["status", "--data-dir", chosen])).out;
        const applied = Number(/position applied: +(\d+)/.exec(await chosenStatus())?.[1]);
        assert.ok(applied >= Math.max(...written.values()), status.out);
        const logBefore = await logState(urls);
        const args = ["refound", "--data-dir", chosen, "--nats", urls.join(","), ...others];

        // The crash: no cleanup (the scratch dir is left in this TMPDIR, the lock file in the
        // data dir), the store still marked diverged.
        const crashed = await cli(args, {
          SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER: step,
          TMPDIR: tempDir("sb-test-refound-tmp-"),
        });
        assert.equal(crashed.code, FAULT_EXIT_CODE, crashed.out);
        assert.match(
          crashed.out,
          new RegExp(`fault hook: cluster refound exits after the ${step} step`),
        );
        assert.doesNotMatch(crashed.out, /re-founded the cluster log/);
        assert.ok(existsSync(`${chosen}/${LOCK_FILE}`), "the crashed run's lock is left behind");
        assert.match(await chosenStatus(), /diverged: +yes/);
        assert.deepEqual(
          await snapshots(urls),
          new Map([[SNAPSHOT_OBJECT, String(applied)]]),
          "the only snapshot, at A",
        );
        if (step === "snapshot") {
          assert.deepEqual(await logState(urls), logBefore, "the log untouched");
        } else {assert.deepEqual(
            await logState(urls),
            [applied + 1, applied, 0],
            "the log made again, empty at A + 1",
          );}

        // Run again, as the docs say: it does the whole.
        const again = await cli(args);
        assert.equal(again.code, 0, again.out);
        const base = Number(
          /re-founded the cluster log on \S+ at position (\d+)/.exec(again.out)?.[1],
        );
        assert.equal(base, applied, again.out);
        assert.match(await chosenStatus(), /diverged: +no/);
        assert.deepEqual(await snapshots(urls), new Map([[SNAPSHOT_OBJECT, String(base)]]));
        assert.deepEqual(await logState(urls), [base + 1, base, 0]);
        // Once more (as after a crash past the last step): refused, nothing changed.
        const third = await cli(args);
        assert.notEqual(third.code, 0);
        assert.match(
          third.out,
          /the store is not marked diverged; .* \(nothing changed\)/,
          third.out,
        );
        assert.deepEqual(await logState(urls), [base + 1, base, 0]);

        // Started as the docs say: every node takes writes and holds every acknowledged write.
        await startAfterRefound(cluster, chosen, base, written);
      } finally {
        await cluster.stop();
      }
    },
  });
}
