/**
 * A fix to nats.js 2.x's Node transport (the one Deno and Bun use), applied once on import:
 * a closed transport yields nothing more to its reader.
 *
 * nats.js reads a connection with a loop over its transport's chunks that hands each one to
 * the connection's *current* protocol parser. A transport yields its received chunks in
 * batches and, once closed, still yields the rest of the batch it was in. When the connection
 * is lost (a nats-server killed) or left (`ClusterLink#moveOn`) in the middle of a batch, the
 * reconnect, a few milliseconds later, puts a new parser in place for the new server, and the
 * old connection's remaining bytes reach that parser: the new connection's stream is read out
 * of step (seen in a long cluster nemesis run after a nats-server SIGKILL with 70-140 KB
 * messages: JetStream answers cut short, `JSON Parse error: Unterminated string`, then nats.js's
 * `parse error` and "reader closed", and the nodes' memory growing to 8-15 GB). Here each chunk
 * is yielded only while the transport is open.
 */
import { NodeTransport } from "nats/lib/src/node_transport.js";

/** The transport's fields the iterator uses (nats.js internals, 2.x). */
interface TransportState {
  yields: Uint8Array[];
  signal: Promise<void> & { resolve(): void };
  done: boolean;
}

/** A promise with its `resolve` attached (nats.js's `deferred`, which the transport's data
 * handler resolves when a chunk arrives). */
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
