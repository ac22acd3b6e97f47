/**
 * Snapshots and compaction of the replicated log, so it does not grow for ever and a new node
 * does not replay the cluster's whole history.
 *
 * Every node's LMDB holds the whole data set at the log position it records. Once the log has
 * grown `every` positions past the newest snapshot, one node (the owner of `SNAPSHOT_TOPIC`
 * among the live nodes that serve: not one that stopped itself, which applies nothing) writes
 * a compacted copy of its LMDB, without its node-local databases, to the JetStream object store
 * `sb-snapshots` (replicated like the log), then purges the log up to the previous snapshot's
 * position, never past a position a live node has not applied.
 * The stream thus keeps between `every` and 2 × `every` positions. A stopped node the log cannot
 * bring back asks for a snapshot reaching a position (`divergence/rebuild.ts` `wantSnapshot`): the owner among
 * the serving nodes other than the asking one takes it as soon as it applied that position.
 *
 * A node whose position the log no longer reaches (a new node after a compaction, or one back
 * after a long absence) replaces its store with the newest snapshot before it opens it
 * (`restoreIfBehind`), then follows the log from the snapshot's position.
 */
import { renameSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { log } from "../log/mod.ts";
import { StoreEnv } from "../store/env.ts";
import type { ClusterLink } from "./link.ts";
import { type NodeWatch, ownerOf } from "./nodes.ts";
import { getFile } from "./object_get.ts";
import {
  NODE_LOCAL_DB,
  POSITION_DB,
  type ReplicatedEnv,
  UNLISTED_NODE_LOCAL,
} from "./replicated_env.ts";
import {
  DIVERGED_KEY,
  SNAPSHOT_BUCKET,
  SNAPSHOT_OBJECT,
  SNAPSHOT_WANTED_SUBJECT,
  type SnapshotWanted,
} from "./divergence/mod.ts";

// Where the newest snapshot is (a node rebuilding its store reads it too).
const BUCKET = SNAPSHOT_BUCKET;
const OBJECT = SNAPSHOT_OBJECT;
/** The topic whose owner node takes the snapshots. */
export const SNAPSHOT_TOPIC = "cluster:snapshot";

/** The log position recorded in the LMDB store at `path` (0 for a new store); `clearNodeOnly`
 * empties the node-local databases the store's node declared (a snapshot holds no node's own
 * rows). */
async function positionOf(path: string, clearNodeOnly = false): Promise<number> {
  const store = new StoreEnv(path, false);
  try {
    if (clearNodeOnly) {
      for (const name of [...store.db(NODE_LOCAL_DB).getKeys()]) {
        store.db(name as string).clearSync();
      }
    }
    return store.db<number>(POSITION_DB).get("applied") ?? 0;
  } finally {
    await store.close();
  }
}

/** Whether the store at `path` carries the diverged mark (`divergence/rebuild.ts` `DIVERGED_KEY`). */
async function markedDiverged(path: string): Promise<boolean> {
  const store = new StoreEnv(path, false);
  try {
    return store.db<string>(POSITION_DB).get(DIVERGED_KEY) !== undefined;
  } finally {
    await store.close();
  }
}

/**
 * Readies a downloaded snapshot at `path` to be this node's store; returns its position. The
 * node-local databases it lists are emptied (another node's rows: its queued webhooks). A
 * snapshot written by a node of an earlier version lists none although it holds such rows: it
 * is marked (`UNLISTED_NODE_LOCAL`), and the store then empties each database this node
 * declares node-local the first time it declares it (`ReplicatedEnv.nodeLocal`), so a restored
 * node never sends another node's queued webhooks.
 */
export async function readyRestored(path: string): Promise<number> {
  const store = new StoreEnv(path, false);
  try {
    const listed = [...store.db(NODE_LOCAL_DB).getKeys()] as string[];
    for (const name of listed) store.db(name).clearSync();
    const state = store.db<number>(POSITION_DB);
    if (listed.length === 0) state.putSync(UNLISTED_NODE_LOCAL, 1);
    else state.removeSync(UNLISTED_NODE_LOCAL);
    return state.get("applied") ?? 0;
  } finally {
    await store.close();
  }
}

/**
 * Before the store at `path` opens: when the log was compacted past this node's position,
 * replaces the store with the newest snapshot (a few attempts: a snapshot replaced while it
 * downloads fails its digest check). Throws when no snapshot covers the gap.
 */
export async function restoreIfBehind(link: ClusterLink, path: string): Promise<void> {
  const { first } = await link.bounds();
  if (first <= 1) return;
  const applied = await positionOf(path);
  if (applied + 1 >= first) return;
  // A store that stopped as diverged is replaced by its rebuild only, which first checks that
  // the snapshot and the log hold its confirmed history (`divergence/guard.ts`).
  if (await markedDiverged(path)) return;
  for (let attempt = 1;; attempt++) {
    try {
      const position = await download(link, path, first);
      log.info("cluster store restored from a snapshot", { position, was: applied });
      return;
    } catch (err) {
      if (attempt === 3) throw err;
      log.warn("cluster snapshot download failed; retrying", { error: String(err) });
      // Read from another server: this one may refuse JetStream requests (`rebuildSource`).
      if (!/no snapshot reaches it/.test(String(err))) await link.snapshotReadFailed(err, attempt);
    }
  }
}

/** Downloads the newest snapshot over the store at `path`; returns its position. */
async function download(link: ClusterLink, path: string, first: number): Promise<number> {
  const store = await link.objectStore(BUCKET);
  const got = await store.get(OBJECT);
  const position = Number(got?.info.description);
  if (!got || !(position + 1 >= first)) {
    throw new Error(`the cluster log starts at ${first} and no snapshot reaches it`);
  }
  const partial = `${path}.restore`;
  try {
    await getFile(got, partial);
    const stored = await readyRestored(partial);
    if (stored !== position) throw new Error(`snapshot holds position ${stored}, not ${position}`);
    rmSync(`${path}-lock`, { force: true });
    renameSync(partial, path);
  } finally {
    rmSync(partial, { force: true });
    rmSync(`${partial}-lock`, { force: true });
  }
  return position;
}

/** Snapshot settings. */
export interface SnapshotOptions {
  /** Positions between snapshots. */
  every: number;
  /** How often the owner checks whether one is due. */
  checkMs: number;
  /** Whether stopped nodes' requests are heard (false: the fault hook
   * `SWITCHBOARD_FAULT_IGNORE_SNAPSHOT_ASKS`, as if they were lost). */
  hearAsks: boolean;
}

/** Starts taking snapshots on this node while it owns them (see the module comment), and when
 * a stopped node asks for one (`divergence/rebuild.ts` `wantSnapshot`: the owner among the serving nodes
 * other than the asking one takes it once it applied the position asked for); returns the stop
 * function. */
export function startSnapshots(
  link: ClusterLink,
  env: ReplicatedEnv,
  nodes: NodeWatch,
  opts: SnapshotOptions,
): () => void {
  let newest = 0;
  let busy = false;
  /** The latest request heard and not yet met. */
  let wanted: SnapshotWanted | undefined;
  const unsubscribe = !opts.hearAsks
    ? () => {}
    : link.subscribe(SNAPSHOT_WANTED_SUBJECT, (data) => {
      try {
        const asked = JSON.parse(new TextDecoder().decode(data)) as SnapshotWanted;
        if (
          typeof asked.n === "string" && Number.isSafeInteger(asked.p) && asked.p > newest &&
          asked.n !== nodes.me
        ) wanted = asked;
      } catch { /* not a request */ }
    });
  const timer = setInterval(() => {
    // A node that stopped itself (or is rebuilding) holds no history the others agree with.
    if (busy || env.stopped) return;
    if (wanted && wanted.p <= newest) wanted = undefined;
    const serving = nodes.serving();
    const asked = wanted !== undefined && env.applied >= wanted.p &&
      ownerOf(SNAPSHOT_TOPIC, serving.filter((n) => n !== wanted!.n)) === nodes.me;
    if (
      !asked && (env.applied - newest < opts.every || ownerOf(SNAPSHOT_TOPIC, serving) !== nodes.me)
    ) return;
    busy = true;
    snapshot(link, env, nodes, asked ? { reaching: wanted!.p } : { every: opts.every })
      .then((position) => (newest = position))
      .catch((err) => log.warn("cluster snapshot failed", { error: String(err) }))
      .finally(() => (busy = false));
  }, opts.checkMs);
  return () => {
    clearInterval(timer);
    unsubscribe();
  };
}

/** Stores a snapshot when one is due (`every` positions past the newest, or none yet
 * `reaching` the position a stopped node asked for), then compacts the log; returns the newest
 * snapshot's position. */
async function snapshot(
  link: ClusterLink,
  env: ReplicatedEnv,
  nodes: NodeWatch,
  due: { every: number } | { reaching: number },
): Promise<number> {
  const store = await link.objectStore(BUCKET);
  const previous = Number((await store.info(OBJECT))?.description ?? 0);
  if ("every" in due ? env.applied - previous < due.every : previous >= due.reaching) {
    return previous;
  }
  const dir = await mkdtemp(join(tmpdir(), "sb-snapshot-"));
  try {
    const file = join(dir, "snapshot.mdb");
    await env.backup(file);
    const position = await positionOf(file, true);
    // Only a history a majority of the nodes confirmed is stored (nodes rebuild from it).
    if (!(await env.confirmed(position, 10_000))) {
      throw new Error(`position ${position} not confirmed by a majority of the nodes`);
    }
    const { size } = await link.putObject(
      BUCKET,
      { name: OBJECT, description: String(position) },
      file,
    );
    const below = Math.min(previous, nodes.lowestApplied()) + 1;
    if (below > 1) await link.purge(below);
    log.info("cluster snapshot stored", {
      position,
      bytes: size,
      log_purged_below: below,
      ...("reaching" in due ? { asked_for: due.reaching } : {}),
    });
    return position;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
