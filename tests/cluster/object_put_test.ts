// A file put into a JetStream object store a few chunks at a time (lib/cluster/object_put.ts),
// against a real nats-server: nats.js's own put has every chunk of the file awaiting its ack at
// once (what took JetStream out of service in a long nemesis run); `putFile` keeps at most its
// window in flight, the object reads back byte for byte, and a put whose chunk publishes fail
// rejects with that error and leaves no unhandled rejection behind (nats.js's own put may leave
// one for each chunk that fails before it has read the whole body). Acks come 50 ms late, as
// from a busy server: on an idle loopback server they come back before the next chunk is read.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { connect, type JetStreamClient, type NatsConnection } from "nats";
import { putFile } from "../../lib/cluster/object_put.ts";
import { startNatsCluster } from "./nats_servers.ts";

const CHUNK = 128 * 1024;
const CHUNKS = 24;

/** `js`, with its publishes counted (the most awaiting their ack at once), each ack `lateMs`
 * late (a busy server) and, from the `failFrom`-th on, failed at once as JetStream's 503 (no
 * responders) is. */
function watched(js: JetStreamClient, failFrom = Infinity, lateMs = 50) {
  const seen = { inflight: 0, most: 0, sent: 0 };
  const client = Object.create(js, {
    publish: {
      value(...args: Parameters<JetStreamClient["publish"]>) {
        seen.sent++;
        seen.most = Math.max(seen.most, ++seen.inflight);
        const late = new Promise((r) => setTimeout(r, lateMs));
        const inner = seen.sent >= failFrom
          ? Promise.reject(new Error("503"))
          : js.publish(...args).then(async (r) => (await late, r));
        // A promise of its own, with no handler yet: what the caller does with it shows.
        return new Promise((resolve, reject) =>
          inner.then((r) => (seen.inflight--, resolve(r)), (err) => (seen.inflight--, reject(err)))
        );
      },
    },
  }) as JetStreamClient;
  return { client, seen };
}

/** Runs `fn` with a JetStream connection to one fresh nats-server and a file of `CHUNKS` chunks. */
async function withServer(
  fn: (nc: NatsConnection, file: string, bytes: Uint8Array) => Promise<void>,
) {
  const nats = await startNatsCluster(1);
  const dir = mkdtempSync(join(tmpdir(), "sb-test-object-put-"));
  const nc = await connect({ servers: nats.urls });
  try {
    const bytes = new Uint8Array(randomBytes(CHUNKS * CHUNK - 1000));
    const file = join(dir, "object.bin");
    writeFileSync(file, bytes);
    await fn(nc, file, bytes);
  } finally {
    await nc.close();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

Deno.test({
  name:
    "object put: at most its window of chunks awaits an ack (nats.js's own put: every chunk), and the object reads back whole",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withServer(async (nc, file, bytes) => {
      // nats.js's own put of the same file, for comparison; acks 500 ms late so that even a
      // loaded machine reads the whole file before the first ack.
      const plain = watched(nc.jetstream(), Infinity, 500);
      const store = await plain.client.views.os("plain");
      await store.put(
        { name: "o" },
        Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>,
      );
      assert.ok(
        plain.seen.most >= CHUNKS / 2,
        `nats.js's put had ${plain.seen.most} chunks in flight`,
      );

      const limited = watched(nc.jetstream());
      const info = await putFile(
        limited.client,
        "limited",
        {},
        { name: "o", description: "7" },
        file,
        4,
      );
      assert.equal(info.size, bytes.length);
      assert.equal(info.description, "7");
      assert.ok(limited.seen.sent >= CHUNKS, `${limited.seen.sent} publishes`);
      assert.ok(
        limited.seen.most <= 4 + 1,
        `at most the window of chunks (and the closing metadata) in flight: ${limited.seen.most}`,
      );

      const read = await (await nc.jetstream().views.os("limited")).getBlob("o");
      assert.ok(
        read !== null && Buffer.from(read).equals(Buffer.from(bytes)),
        "the object reads back byte for byte",
      );
    });
  },
});

Deno.test({
  name:
    "object put: chunk publishes that fail make the put fail with their error, with no unhandled rejection",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: PromiseRejectionEvent) => {
      unhandled.push(e.reason);
      e.preventDefault();
    };
    globalThis.addEventListener("unhandledrejection", onUnhandled);
    try {
      await withServer(async (nc, file) => {
        // The listener sees a rejection nobody handles (so its silence below means something).
        // nats.js's own put is not the canary: whether its failed chunks go unhandled depends on
        // how far it has read the body when they fail, which varies from run to run.
        Promise.reject(new Error("canary"));
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(
          unhandled.map((e) => (e as Error).message),
          ["canary"],
          "the listener sees unhandled rejections",
        );
        unhandled.length = 0;

        const failing = watched(nc.jetstream(), 3);
        await assert.rejects(putFile(failing.client, "failing", {}, { name: "o" }, file, 4), /503/);
        await new Promise((r) => setTimeout(r, 300));
        assert.ok(failing.seen.sent >= 4, `${failing.seen.sent} publishes, several failing`);
      });
      assert.deepEqual(unhandled, [], "no unhandled rejection from putFile");
    } finally {
      globalThis.removeEventListener("unhandledrejection", onUnhandled);
    }
  },
});
