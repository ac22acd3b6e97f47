/**
 * A JetStream object read into a file, given up when it stalls: nats.js's `ObjectStore.get`
 * neither ends nor fails when the chunks go away under the read (another node stores a newer
 * snapshot under the same name) or stop coming; a rebuild once waited 12 minutes so. A read
 * that gets no chunk for `idleMs` fails, and the caller reads the newer one.
 */
import { createWriteStream } from "node:fs";
import { Writable } from "node:stream";
import type { ObjectResult } from "nats";

/** How long a snapshot read may go without a chunk before it is given up: beyond a JetStream
 * election of the object store's stream (5-11 s with nats-server 2.9.10 here). */
export const OBJECT_IDLE_MS = 15_000;

/** Thrown when an object read got no chunk for its idle time. */
export class ObjectReadStalled extends Error {}

/** Writes the data of `got` (an `ObjectStore.get` result) to `file`; rejects with
 * `ObjectReadStalled` when no chunk arrives for `idleMs`, with the source cancelled (nats.js
 * then drops its consumer), or with the read's own error. */
export async function getFile(
  got: ObjectResult,
  file: string,
  idleMs = OBJECT_IDLE_MS,
): Promise<void> {
  const stall = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let bytes = 0;
  const arm = () => {
    clearTimeout(timer);
    const why = `object read stalled: no chunk for ${idleMs} ms after ${bytes} bytes`;
    timer = setTimeout(() => stall.abort(new ObjectReadStalled(why)), idleMs);
  };
  const watched = got.data.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        bytes += chunk.byteLength;
        arm();
        out.enqueue(chunk);
      },
    }),
  );
  arm();
  try {
    await watched.pipeTo(Writable.toWeb(createWriteStream(file)), { signal: stall.signal });
  } finally {
    clearTimeout(timer);
  }
  const error = await got.error;
  if (error) throw error;
}
