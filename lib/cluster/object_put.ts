/**
 * A file stored in a JetStream object store a few chunks at a time: nats.js's `ObjectStore.put`
 * publishes every chunk as it reads it and awaits the acks only at the end, so a snapshot of
 * hundreds of MB sat in memory, queued ahead of the node's log traffic, and each chunk whose
 * publish failed was an unhandled rejection. Here the body is read only while fewer than
 * `window` chunks await their ack, and each publish is marked handled (the put still fails).
 */
import { createReadStream } from "node:fs";
import type { JetStreamClient, ObjectInfo, ObjectStoreMeta, ObjectStoreOptions } from "nats";

/** Bytes read from the file at a time: one object-store chunk (nats.js's default size). */
const CHUNK = 128 * 1024;
/** Chunk publishes awaiting their ack at most, by default (512 KiB in flight). */
const WINDOW = 4;

/** Stores `file` as object `meta.name` of the object store `bucket` (created with `options`
 * when missing), with at most `window` chunk publishes awaiting their ack; the stored object's
 * info. */
export async function putFile(
  js: JetStreamClient,
  bucket: string,
  options: Partial<ObjectStoreOptions>,
  meta: ObjectStoreMeta,
  file: string,
  window = WINDOW,
): Promise<ObjectInfo> {
  let inflight = 0;
  let wake: (() => void) | undefined;
  // The store's JetStream client: the same one, with its publishes counted and marked handled.
  const counted = Object.create(js, {
    publish: {
      value(...args: Parameters<JetStreamClient["publish"]>) {
        inflight++;
        const ack = js.publish(...args);
        ack.catch(() => {}).finally(() => {
          inflight--;
          wake?.();
        });
        return ack;
      },
    },
  }) as JetStreamClient;
  const store = await counted.views.os(bucket, options);
  const chunks = createReadStream(file, { highWaterMark: CHUNK })[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (inflight >= window) await new Promise<void>((resolve) => (wake = resolve));
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(new Uint8Array(next.value as Buffer));
    },
    async cancel() {
      await chunks.return?.();
    },
  }, { highWaterMark: 0 });
  try {
    return await store.put(meta, body);
  } finally {
    await chunks.return?.();
  }
}
