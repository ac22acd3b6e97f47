/**
 * How a node that stopped itself (it applied the log differently from a majority of the nodes,
 * `agreement.ts`) gets back without an operator: its replicated state is thrown away and
 * replaced, in one local commit, by a state the majority agrees with, from which it follows the
 * log again (read from the stream's leader, the one truth):
 *
 * - the newest snapshot (`snapshots.ts`: taken only by a node whose position a majority
 *   confirmed), when one exists and the log still holds every position after it;
 * - else the empty store at position 0, when the log was never compacted (the whole log is
 *   replayed).
 *
 * When the log no longer holds history a majority confirmed (`confirmed_guard.ts` refuses the
 * rebuild) or holds other messages than they applied (the rebuilt store disagrees again), the
 * node asks the others for a snapshot past that position (`wantSnapshot`) and starts from that
 * one next.
 *
 * The node marks itself diverged in its store (`DIVERGED_KEY`) as soon as it stops; the
 * replacing commit clears the mark together with the old state. So a crash at any point leaves
 * either the old state with the mark (the restarted node rebuilds again before it serves) or a
 * state the log reached at some position, never a mix of the two.
 */
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database, Key, RootDatabase } from "lmdb";
import { StoreEnv } from "../store/env.ts";
import type { ClusterLink } from "./link.ts";
import { getFile } from "./object_get.ts";

/** The JetStream object store and object holding the newest snapshot (`snapshots.ts`). */
export const SNAPSHOT_BUCKET = "sb-snapshots";
export const SNAPSHOT_OBJECT = "lmdb";

/** Core NATS subject on which a stopped node the log cannot bring back asks for a snapshot
 * reaching a position (`wantSnapshot`; `snapshots.ts` takes it). */
export const SNAPSHOT_WANTED_SUBJECT = "sb.snapshot.wanted";

/** What a stopped node asks for: a snapshot at `p` or later, taken by a live node other than
 * `n` (the asking node). */
export interface SnapshotWanted {
  n: string;
  p: number;
}

/**
 * Asks the other nodes for a snapshot at `position` or later. A rebuild is refused when the
 * log, as the stream's leader holds it now, no longer holds history a majority confirmed (a
 * JetStream replica lost or renumbered it: runs R1, D0, G1 in
 * bench/results/), and a store
 * rebuilt from the log disagrees with the majority when it holds other messages than they
 * applied; a snapshot past that position (the last one confirmed when the node stopped, or the
 * one it disagrees at), taken by a node whose history a majority confirmed there, holds their
 * history, so a rebuild from it reads only the log after it. Fire and forget: asked again at
 * each refusal and at each look of a held rebuild.
 */
export function wantSnapshot(link: ClusterLink, position: number): void {
  const wanted: SnapshotWanted = { n: link.nodeId, p: position };
  link.publish(SNAPSHOT_WANTED_SUBJECT, new TextEncoder().encode(JSON.stringify(wanted)));
}

/** The key (in the position database) marking a store that applied another history than the
 * majority; its value is the reason. */
export const DIVERGED_KEY = "diverged";

/** What a rebuild starts from: the log position it holds, and the store holding it (none for the
 * empty store at 0). */
export interface RebuildSource {
  position: number;
  store?: StoreEnv;
  /** Closes and deletes the downloaded snapshot. */
  dispose(): Promise<void>;
}

/** Thrown when no snapshot reaches the log's first position (nothing another server changes). */
class NoSnapshotError extends Error {}

/** Reads of the snapshot tried within one rebuild attempt, each after the first on another
 * NATS server from `--nats`, and how long each waits for the connection to be back. */
const SNAPSHOT_TRIES = 3;
const RECONNECT_WAIT_MS = 5000;

/**
 * The state to rebuild from (see the module comment), given the log's first position. Throws
 * when none reaches the log (the log was compacted and no snapshot covers it yet), or when the
 * snapshot could not be read in `SNAPSHOT_TRIES` tries.
 *
 * The snapshot is read with nats.js's object store, whose JetStream requests take the first
 * answer from the server the node is connected to: a server that lost sight of JetStream's meta
 * leader answers each at once with 503 ("JetStream system temporarily unavailable", 10008; or
 * no responders), although the object store's leader, elsewhere, would serve it. A stopped node
 * reads nothing else from the log meanwhile, so nothing else moves it off that server: after a
 * failed read it moves to the next server from `--nats` (`ClusterLink#moveOn`) and reads
 * there.
 */
export async function rebuildSource(
  link: ClusterLink,
  first: number,
  tries = SNAPSHOT_TRIES,
): Promise<RebuildSource> {
  for (let attempt = 1;; attempt++) {
    try {
      return await sourceOnce(link, first);
    } catch (err) {
      if (err instanceof NoSnapshotError || attempt >= tries) throw err;
      await readElsewhere(link, err, attempt);
    }
  }
}

/** What a rebuild reads from NATS, as strings (equal strings: a rebuild would read the same).
 * `full`: the server leading the stream (whose replica every read of the log is answered from),
 * the log's bounds, and the newest snapshot. `refusal`: the same without the log's last
 * position; a refused rebuild (`confirmed_guard.ts`) found other history at or before a
 * position a majority confirmed, which the log growing past it does not change (another
 * leader, a compaction or a snapshot may). A stopped node holds its next rebuild while the one
 * its hold is about and the others' reports stay the same (`replicated_env.ts` `#stillHeld`).
 */
export interface RebuildInputs {
  full: string;
  refusal: string;
}

/** Reads what a rebuild reads from NATS (see `RebuildInputs`). */
export async function rebuildInputs(link: ClusterLink): Promise<RebuildInputs> {
  const [state, snapshot] = await Promise.all([
    link.state(),
    link.objectStore(SNAPSHOT_BUCKET).then((objects) => objects.info(SNAPSHOT_OBJECT)),
  ]);
  const newest = snapshot ? [snapshot.description, snapshot.nuid] : null;
  return {
    full: JSON.stringify([state.leader ?? null, state.first, state.last, newest]),
    refusal: JSON.stringify([state.leader ?? null, state.first, newest]),
  };
}

/** After a failed read of the snapshot: moves `link` to the next server from `--nats` and
 * resolves once it is connected there (see `rebuildSource`; a node restoring a snapshot before
 * it starts, `snapshots.ts`, does the same). */
export async function readElsewhere(
  link: ClusterLink,
  err: unknown,
  attempt: number,
): Promise<void> {
  link.moveOn("cluster snapshot read failed on this NATS server; reading it from another", {
    error: String(err),
    attempt,
  });
  await reconnected(link, RECONNECT_WAIT_MS);
}

/** Resolves once `link` is connected again after a move (or after `ms`). */
async function reconnected(link: ClusterLink, ms: number): Promise<void> {
  // The move closes the transport on a later turn: connected() may still say yes at first.
  await new Promise((r) => setTimeout(r, 100));
  for (const deadline = Date.now() + ms; !link.connected() && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One try of `rebuildSource`. */
async function sourceOnce(link: ClusterLink, first: number): Promise<RebuildSource> {
  const objects = await link.objectStore(SNAPSHOT_BUCKET);
  const info = await objects.info(SNAPSHOT_OBJECT);
  const position = Number(info?.description);
  if (info && Number.isSafeInteger(position) && position + 1 >= first) {
    return await downloadSnapshot(link, position);
  }
  if (first <= 1) return { position: 0, dispose: async () => {} };
  throw new NoSnapshotError(`the cluster log starts at ${first} and no snapshot reaches it`);
}

/** Downloads the newest snapshot into a temporary directory and opens it. */
async function downloadSnapshot(link: ClusterLink, expected: number): Promise<RebuildSource> {
  const dir = await mkdtemp(join(tmpdir(), "sb-rebuild-"));
  const dispose = async () => {
    await store?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  let store: StoreEnv | undefined;
  try {
    const objects = await link.objectStore(SNAPSHOT_BUCKET);
    const got = await objects.get(SNAPSHOT_OBJECT);
    if (!got) throw new Error("the snapshot disappeared");
    const file = join(dir, "snapshot.mdb");
    await getFile(got, file);
    store = new StoreEnv(file, false);
    const position = store.db<number>(POSITION_DB_NAME).get("applied") ?? 0;
    const described = Number(got.info.description);
    if (position !== described) {
      throw new Error(`snapshot holds position ${position}, not ${described}`);
    }
    if (position < expected) {
      throw new Error(`snapshot at ${position} is older than the one listed (${expected})`);
    }
    return { position, store, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** The position database's name (`replicated_env.ts` `POSITION_DB`; repeated here to keep the
 * import one-way). */
const POSITION_DB_NAME = "cluster:state";

/** What the replacing commit needs of the live store. */
export interface LiveStore {
  root: RootDatabase;
  /** A raw database of the live store by name. */
  db(name: string): Database<unknown, Key>;
  /** Databases whose rows are this node's own: kept as they are (webhook outboxes, the list of
   * node-local databases). */
  keep: Set<string>;
  /** Databases the apply keeps alike on every node although they are in `keep` (the position
   * and the recent writes): replaced like the rest. */
  replaced: string[];
}

/**
 * Replaces, in one local commit, every replicated database of `live` with `source`'s (empty
 * for the empty store) and records `source.position` as the position applied, clearing the
 * diverged mark; node-local databases are kept. Every read of `source` happens inside the
 * commit's callback, and nothing in it throws on purpose (lmdb-js would commit what was put
 * before a throw).
 */
export async function replaceStore(live: LiveStore, source: RebuildSource): Promise<void> {
  const names = (root: RootDatabase) =>
    [...root.getKeys()].filter((k): k is string => typeof k === "string");
  const replaced = new Set(live.replaced);
  const skip = (name: string) => live.keep.has(name) && !replaced.has(name);
  const sourceNodeLocal = new Set<string>();
  if (source.store) {
    for (const k of source.store.db("cluster:node-local").getKeys()) {
      sourceNodeLocal.add(k as string);
    }
  }
  const liveNames = names(live.root).filter((n) => !skip(n));
  const sourceNames = source.store
    ? names(source.store.root).filter((n) =>
      !skip(n) && !sourceNodeLocal.has(n) && n !== "cluster:node-local"
    )
    : [];
  // Opened before the commit: opening a database is itself a write.
  const targets = new Map(sourceNames.map((n) => [n, live.db(n)]));
  const cleared = liveNames.map((n) => live.db(n));
  await live.root.transaction(() => {
    for (const db of cleared) db.clearSync();
    for (const name of sourceNames) {
      const target = targets.get(name)!;
      for (const { key, value } of source.store!.db(name).getRange()) target.put(key, value);
    }
    live.db(POSITION_DB_NAME).put("applied", source.position);
    live.db(POSITION_DB_NAME).remove(DIVERGED_KEY);
  });
}
