/**
 * A fix to nats.js's Node transport (2.x; 3.4's `iterate` alike), applied on import: a closed
 * transport yields nothing more. nats.js hands each chunk to the connection's *current* parser,
 * and a closed transport still yielded the rest of its batch, so after a lost connection or a
 * move the new server's parser got the old one's bytes (seen after a nats-server SIGKILL:
 * answers cut short, `parse error`, nodes growing to 15 GB).
 */
import { NodeTransport } from "nats/lib/src/node_transport.js";

/** The transport's fields the iterator uses (nats.js internals, 2.x). */
interface TransportState {
  yields: Uint8Array[];
  signal: Promise<void> & { resolve(): void };
  done: boolean;
}

/** A promise with its `resolve` attached (nats.js's `deferred`). */
function signal(): TransportState["signal"] {
  let resolve!: () => void;
  const p = new Promise<void>((r) => (resolve = r));
  return Object.assign(p, { resolve });
}

/** The transport's chunks, in order, none once it is closed. */
async function* iterate(this: TransportState): AsyncGenerator<Uint8Array> {
  while (!this.done) {
    if (this.yields.length === 0) await this.signal;
    const batch = this.yields;
    this.yields = [];
    for (const chunk of batch) {
      if (this.done) return;
      yield chunk;
    }
    if (this.yields.length === 0) this.signal = signal();
  }
}

(NodeTransport.prototype as unknown as { iterate: typeof iterate }).iterate = iterate;

/** Whether the fix is in place (imported for its effect; tests check it). */
export const transportFixed =
  (NodeTransport.prototype as unknown as { iterate: unknown }).iterate === iterate;
