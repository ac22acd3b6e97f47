// A snapshot read that stalls is given up (lib/cluster/object_get.ts): in a long nemesis run a
// stopped node's rebuild read a snapshot while another node replaced it (which purges the old
// object's chunks) and waited to the end of the run. Against a real nats-server: an object
// whose chunks are gone while its description stays, as a read sees it when the chunks go
// under it. nats.js's own read of it neither ends nor fails; `getFile` fails once no chunk
// came for its idle time, and reads a whole object byte for byte.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "nats";
import { getFile, ObjectReadStalled } from "../../lib/cluster/object_get.ts";
import { startNatsCluster } from "./nats_servers.ts";

const BUCKET = "sb-get-test";

Deno.test({
  name:
    "object read: a whole object is written byte for byte; one whose chunks are gone fails after its idle time instead of waiting for ever",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const nats = await startNatsCluster(1);
    const dir = mkdtempSync(join(tmpdir(), "sb-get-"));
    const nc = await connect({ servers: nats.urls });
    try {
      const objects = await nc.jetstream().views.os(BUCKET);
      // 1 MiB and a bit: nine chunks of nats.js's 128 KiB.
      const body = new Uint8Array(1024 * 1024 + 5000).map((_, i) => (i * 31 + 7) % 251);
      const info = await objects.putBlob({ name: "snap" }, body);

      const whole = join(dir, "whole");
      await getFile((await objects.get("snap"))!, whole, 2000);
      assert.deepEqual(new Uint8Array(readFileSync(whole)), body);

      // The chunks go; the object's description stays (as a read sees it when a newer object of
      // the same name is stored under it).
      const jsm = await nc.jetstreamManager();
      await jsm.streams.purge(`OBJ_${BUCKET}`, { filter: `$O.${BUCKET}.C.${info.nuid}` });

      // nats.js's own read: still neither ended nor failed after 1.5 s.
      const plain = await objects.get("snap");
      assert.ok(plain, "the object is still described");
      let settled = false;
      const plainRead = new Response(plain.data).arrayBuffer().then(
        () => (settled = true),
        () => (settled = true),
      );
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(settled, false, "nats.js's read of an object whose chunks are gone waits");

      const t0 = Date.now();
      await assert.rejects(
        getFile((await objects.get("snap"))!, join(dir, "stalled"), 500),
        (err: unknown) => {
          assert.ok(err instanceof ObjectReadStalled, String(err));
          assert.match(String(err), /no chunk for 500 ms after 0 bytes/);
          return true;
        },
      );
      const waited = Date.now() - t0;
      assert.ok(waited >= 500 && waited < 5000, `given up after its idle time (${waited} ms)`);
      void plainRead;
    } finally {
      await nc.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
});
