// A stopped node's rebuild reads the newest snapshot from another NATS server when the one it
// is connected to answers the object store's requests with 503 (lib/cluster/divergence/rebuild.ts
// `rebuildSource`): in nemesis run A5 a node stopped as diverged stayed on such a server and
// could not rebuild for minutes. Here the node's first server is a plain nats-server whose
// JetStream is a stand-in (tests/cluster/fake_jetstream.ts) that serves the log's requests
// only, so every object store request gets "no responders" (503), as from a server that lost
// its JetStream; the snapshot is in the object store of a real JetStream server, also given to
// `--nats`.
import assert from "node:assert/strict";
import { createReadStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { connect } from "nats";
import { ClusterLink } from "../../lib/cluster/link.ts";
import {
  rebuildSource,
  SNAPSHOT_BUCKET,
  SNAPSHOT_OBJECT,
} from "../../lib/cluster/divergence/rebuild.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { until } from "./cluster.ts";
import { fakeOn, plainServer } from "./fake_jetstream.ts";
import { startNatsCluster } from "./nats_servers.ts";

const port = (url: string) => url.split(":").pop();

Deno.test({
  name:
    "cluster rebuild: a snapshot refused (503) by the node's NATS server is read from another one",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const refusing = await plainServer();
    const fake = await fakeOn(refusing.url);
    const nats = await startNatsCluster(1);
    const dir = mkdtempSync(join(tmpdir(), "sb-elsewhere-"));
    let link: ClusterLink | undefined;
    try {
      // The newest snapshot: a store at position 20, in the real JetStream's object store.
      const file = join(dir, "snapshot.mdb");
      const store = new StoreEnv(file, false);
      await store.db("cluster:state").put("applied", 20);
      await store.db("kept").put("k", "v");
      await store.close();
      const nc = await connect({ servers: nats.urls });
      try {
        const objects = await nc.jetstream().views.os(SNAPSHOT_BUCKET);
        await objects.put(
          { name: SNAPSHOT_OBJECT, description: "20" },
          Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>,
        );
      } finally {
        await nc.close();
      }

      link = await ClusterLink.open([refusing.url, nats.urls[0]], "elsewhere");
      const l = link;
      const on = (url: string) => l.connected() && port(l.nc.getServer()) === port(url);
      if (!on(refusing.url)) {
        await l.nc.reconnect(); // to the server whose JetStream serves no object store
        await until("the link is on the refusing server", () => Promise.resolve(on(refusing.url)));
      }
      // Read there only, the snapshot cannot be had: 503.
      await assert.rejects(rebuildSource(l, 15, 1), /503/);
      assert.ok(on(refusing.url));

      // The rebuild's read moves to the other server and gets it there.
      const source = await rebuildSource(l, 15);
      try {
        assert.equal(source.position, 20);
        assert.equal(source.store!.db("kept").get("k"), "v");
      } finally {
        await source.dispose();
      }
      assert.ok(on(nats.urls[0]), `read on ${l.nc.getServer()}`);
    } finally {
      await link?.close();
      await fake.nc.close();
      await refusing.stop();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
});
