/**
 * Test helper: writers appending distinct values to one list object on a cluster's nodes, and
 * the check that every acknowledged value is where its reply said.
 */
import assert from "node:assert/strict";
import type { TestServer } from "../helpers/server.ts";
import { call } from "../pubsub/helpers.ts";

/** The object `key` of the writers' tests. */
export const path = (key: string) => `/api/v1/objects/app-1/ledger/${key}`;

/** Appends `value` to the list slot of object `key` through `node`, asserting a 200; the
 * write's log position (`Switchboard-Position`; one position a write). */
export async function appendAt(node: TestServer, key: string, value: string): Promise<number> {
  const r = await fetch(`${node.baseUrl}${path(key)}/append`, {
    method: "POST",
    headers: node.headers(node.apps[0]),
    body: JSON.stringify({ slot: "l", value }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return Number(r.headers.get("switchboard-position"));
}

/** Writers appending distinct values to a list slot until stopped; every acknowledged value
 * and log_id is recorded, every failure too (its outcome is unknown). */
export function writers(nodes: () => TestServer[], key: string, count: number) {
  const acked = new Map<string, number>();
  const unknown = new Set<string>();
  /** Requests the server never answered (a bug: every write ends in an answer). */
  const hung: string[] = [];
  let stop = false;
  let seq = 0;
  const done = Promise.all(Array.from({ length: count }, async (_, w) => {
    while (!stop) {
      const value = `w${w}-${seq++}`;
      const node = nodes()[w % nodes().length];
      try {
        const r = await call(node, "POST", `${path(key)}/append`, { slot: "l", value });
        if (r.status === 200) acked.set(value, r.body.log_id);
        else {
          assert.equal(
            r.status,
            503,
            `only 503 while the cluster heals: ${JSON.stringify(r.body)}`,
          );
          unknown.add(value);
          // A client backs off from a node that refuses: a stopped node answers at once, and
          // the writers spun on it (about 1,400 refusals in 3 s on a quiet machine), taking
          // the CPU its rebuild and the other nodes needed on a loaded one.
          await new Promise((r) => setTimeout(r, 50));
        }
      } catch (err) {
        if ((err as Error).name === "TimeoutError") hung.push(value);
        unknown.add(value); // the node was killed under the request
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }));
  return {
    acked,
    unknown,
    hung,
    async stop() {
      stop = true;
      await done;
    },
  };
}

/** Asserts every acknowledged value is in the list at its log_id, nothing else is, and the
 * list is contiguous. */
export async function assertNoLoss(node: TestServer, key: string, w: ReturnType<typeof writers>) {
  const r = await call(node, "GET", path(key));
  const list: string[] = r.body.state.l;
  assert.deepEqual(w.hung, [], "every write was answered");
  assert.equal(r.body.log_id, list.length, "one position per append, contiguous");
  assert.equal(new Set(list).size, list.length, "no value stored twice");
  for (const [value, logId] of w.acked) {
    assert.equal(list[logId - 1], value, `acknowledged ${value} at log_id ${logId}`);
  }
  for (const value of list) {
    assert.ok(w.acked.has(value) || w.unknown.has(value), `${value} was written`);
  }
}
