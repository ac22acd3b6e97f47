// nats.js's Node transport, as fixed by lib/cluster/nats_transport.ts: once closed it yields
// nothing more of the batch it was in (nats.js handed those bytes to the next connection's
// parser, reading the new server's stream out of step).
import assert from "node:assert/strict";
import { NodeTransport } from "nats/lib/src/node_transport.js";
import { transportFixed } from "../../lib/cluster/nats_transport.ts";

Deno.test("nats transport: a transport closed in the middle of a batch yields none of the rest", async () => {
  const t = new NodeTransport() as unknown as {
    yields: Uint8Array[];
    signal: { resolve(): void };
    done: boolean;
  } & AsyncIterable<Uint8Array>;
  Object.assign(t, { options: {} }); // as connect() leaves it
  const chunks = [new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([3])];
  t.yields.push(...chunks);
  t.signal.resolve();
  const it = t[Symbol.asyncIterator]();
  assert.deepEqual((await it.next()).value, chunks[0]);
  assert.deepEqual((await it.next()).value, chunks[1]);
  t.done = true; // the connection was lost here (`_closed` sets it)
  const next = await Promise.race([
    it.next(),
    new Promise((r) => setTimeout(() => r("waiting"), 200)),
  ]);
  assert.deepEqual(next, { done: true, value: undefined }, "the third chunk is not yielded");
});

Deno.test("nats transport: an open transport yields every chunk in order, across batches", async () => {
  assert.ok(transportFixed, "the fix is in place");
  const t = new NodeTransport() as unknown as
    & { yields: Uint8Array[]; signal: { resolve(): void } }
    & AsyncIterable<Uint8Array>;
  Object.assign(t, { options: {} });
  const it = t[Symbol.asyncIterator]();
  t.yields.push(new Uint8Array([1]), new Uint8Array([2]));
  t.signal.resolve();
  assert.deepEqual((await it.next()).value, new Uint8Array([1]));
  assert.deepEqual((await it.next()).value, new Uint8Array([2]));
  const third = it.next();
  // The next batch arrives as the transport's data handler delivers it.
  setTimeout(() => {
    t.yields.push(new Uint8Array([3]));
    t.signal.resolve();
  }, 20);
  assert.deepEqual((await third).value, new Uint8Array([3]));
});
