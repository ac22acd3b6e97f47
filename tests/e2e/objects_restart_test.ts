// Durable Objects across a SIGKILL in the middle of a write storm: the state after a restart is
// exactly the fold of the log (states are derived from checkpoints plus the entries after
// them), every acknowledged write is in the log at its log_id, and writes go on from there.
// Every write kind, Unicode object names; a few objects written many times (past several
// checkpoints) and many objects written a few times (before their first checkpoint, so their
// state after the restart is folded from the empty state). Runs against the binary too
// (SWITCHBOARD_BIN).
import assert from "node:assert/strict";
import { startServer, type TestServer } from "../helpers/server.ts";
import { CHECKPOINT_EVERY } from "../../lib/objects/store.ts";

const KEYS = ["plain", "café ☕", "ключ:with:colons", "😀 emoji"];
/** Objects that stay below their first checkpoint in the second storm. */
const SHORT_KEYS = Array.from({ length: 48 }, (_, i) => `court ${i} é`);
const base = (s: TestServer, key: string) =>
  `${s.baseUrl}/api/v1/objects/app-1/${encodeURIComponent("tipo é")}/${encodeURIComponent(key)}`;

interface Item {
  op: "set" | "delete";
  key: string;
  value: unknown;
  log_id: number;
}

/** One write of kind `i % 6` on `key`: method, path suffix and body. */
function writeOf(i: number): [string, string, unknown] {
  const slot = `s${i % 4}`;
  switch (i % 6) {
    case 0:
      return ["PUT", `/${encodeURIComponent(slot)}`, { value: { i, text: "ü😀" } }];
    case 1:
      return ["PATCH", "", { [slot]: i, "ñ": [i] }];
    case 2:
      return ["POST", "/increment", { slot: "n", by: 2 }];
    case 3:
      return ["POST", "/append", { slot: "list", value: `é${i}` }];
    case 4:
      return ["DELETE", `/${encodeURIComponent(slot)}`, undefined];
    default:
      return ["POST", "/transaction", [{ op: "increment", key: "n", by: 1 }, {
        op: "set",
        key: "t",
        value: i,
      }]];
  }
}

/** The state a log's items describe. */
function fold(items: Item[]): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  for (const it of items) {
    if (it.op === "delete") delete state[it.key];
    else state[it.key] = it.value;
  }
  return state;
}

/** Sends write `i` (see `writeOf`) on `key`; resolves with its log_id once answered 200. */
async function send(s: TestServer, key: string, i: number): Promise<number> {
  const [method, suffix, body] = writeOf(i);
  const res = await fetch(base(s, key) + suffix, {
    method,
    headers: s.headers(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const reply = await res.json();
  assert.equal(res.status, 200, JSON.stringify(reply));
  return reply.log_id;
}

/** Checks every object: contiguous log, state equal to its fold, acknowledged writes present. */
async function verify(
  s: TestServer,
  keys: string[],
  acked: Map<string, number[]>,
): Promise<Map<string, number>> {
  const heads = new Map<string, number>();
  for (const key of keys) {
    const snap = await (await fetch(base(s, key), { headers: s.headers() })).json();
    const { items } = await (await fetch(`${base(s, key)}/log?after=0`, { headers: s.headers() }))
      .json() as {
        items: Item[];
      };
    const ids = [...new Set(items.map((it) => it.log_id))];
    assert.deepEqual(
      ids,
      Array.from({ length: ids.length }, (_, i) => i + 1),
      `${key}: contiguous log`,
    );
    assert.equal(snap.log_id, ids.length, `${key}: log_id is the log's head`);
    assert.deepEqual(snap.state, fold(items), `${key}: state is the fold of the log`);
    for (const id of acked.get(key) ?? []) {
      assert.ok(id <= snap.log_id, `${key}: acknowledged write ${id} kept`);
    }
    heads.set(key, snap.log_id);
  }
  return heads;
}

/**
 * Writes to `keys` with 16 writers until `count` writes are acknowledged, SIGKILLs the server
 * mid-storm and restarts it on the same data dir; checks every object (`verify`), then that
 * writes go on from the restored state and survive a clean restart. Resolves with the heads
 * found after the kill.
 */
async function stormAndKill(keys: string[], count: number): Promise<Map<string, number>> {
  let server = await startServer();
  try {
    const acked = new Map<string, number[]>(keys.map((k) => [k, []]));
    let sent = 0;
    let killed = false;
    const writer = async (w: number) => {
      for (let i = w; !killed && i < 100_000; i += 16) {
        const key = keys[i % keys.length];
        try {
          acked.get(key)!.push(await send(server, key, Math.floor(i / keys.length)));
          sent++;
        } catch (err) {
          if (!killed) throw err;
        }
      }
    };
    const writers = Array.from({ length: 16 }, (_, w) => writer(w));
    const deadline = Date.now() + 30_000;
    while (sent < count) {
      assert.ok(Date.now() < deadline, `only ${sent} writes acknowledged in 30 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
    killed = true;
    await server.kill();
    await Promise.all(writers);

    server = await startServer({ dataDir: server.dataDir });
    const found = await verify(server, keys, acked);
    assert.ok([...found.values()].reduce((a, b) => a + b) >= count);
    const heads = new Map(found);
    for (let i = 0; i < 40; i++) {
      const key = keys[i % keys.length];
      const logId = await send(server, key, i);
      assert.equal(logId, heads.get(key)! + 1);
      heads.set(key, logId);
    }
    await server.stop();
    server = await startServer({ dataDir: server.dataDir });
    assert.deepEqual(await verify(server, keys, acked), heads);
    return found;
  } finally {
    await server.stop();
  }
}

Deno.test("Durable Objects: after a SIGKILL mid-storm every state is the fold of its log and every acknowledged write is kept", async () => {
  const heads = await stormAndKill(KEYS, 400);
  assert.ok(
    [...heads.values()].some((h) => h > 2 * CHECKPOINT_EVERY),
    `heads ${[...heads.values()]}: past two checkpoints`,
  );
});

Deno.test("Durable Objects: objects below their first checkpoint come back from a SIGKILL folded from their log", async () => {
  const heads = await stormAndKill(SHORT_KEYS, 150);
  for (const [key, head] of heads) {
    assert.ok(head < CHECKPOINT_EVERY, `${key}: ${head} entries, no checkpoint yet`);
  }
});
