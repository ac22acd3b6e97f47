/**
 * What a node that stopped itself rebuilds from, and the swap. Its replicated state is replaced
 * in one local commit by the newest snapshot (taken only by a node a majority confirmed) when the
 * log still holds every position after it, else by the empty store when the log was never
 * compacted; it then follows the log from there. The diverged mark (`DIVERGED_KEY`), set when it
 * stops, is cleared by that same commit: a crash leaves the old state marked or a state the log
 * reached, never a mix.
 */
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database, Key, RootDatabase } from "lmdb";
import { StoreEnv } from "../../store/env.ts";
import type { ClusterLink } from "../link.ts";
import { getFile } from "../object_get.ts";
import { log } from "../../log/mod.ts";

/** The JetStream object store and object holding the newest snapshot (`snapshots.ts`). */
export const SNAPSHOT_BUCKET = "sb-snapshots";
export const SNAPSHOT_OBJECT = "lmdb";
/** Core NATS subject on which a stopped node asks for a snapshot reaching a position. */
export const SNAPSHOT_WANTED_SUBJECT = "sb.snapshot.wanted";
/** The position database (`replicated_env.ts` `POSITION_DB`; repeated: imports stay one-way). */
export const POSITION_DB = "cluster:state";
/** Keys of the position database set when a node stops itself: the reason (the diverged mark),
 * the first position it applied after the last one a majority confirmed, that confirmed position
 * (raised by claims; a rebuild must keep the history up to it), and its report id (`unsure.ts`). */
export const DIVERGED_KEY = "diverged";
export const UNSURE_FROM_KEY = "diverged_from";
export const CONFIRMED_KEY = "confirmed";
export const UNSURE_REPORT_KEY = "unsure_report";

/** A stopped node's ask: a snapshot at `p` or later, taken by a live node other than `n`. */
export interface SnapshotWanted {
  n: string;
  p: number;
}

/**
 * Asks the other nodes for a snapshot at `position` or later: when the log no longer holds
 * history a majority confirmed (a rebuild refused) or holds other messages than they applied (a
 * rebuilt store disagreeing), such a snapshot holds their history without that part of the log.
 * Fire and forget: asked again at each refusal and each look of a held rebuild.
 */
export function wantSnapshot(link: ClusterLink, position: number): void {
  const wanted: SnapshotWanted = { n: link.nodeId, p: position };
  link.publish(SNAPSHOT_WANTED_SUBJECT, new TextEncoder().encode(JSON.stringify(wanted)));
}

/** What a rebuild starts from: the position it holds, and its store (none: the empty store). */
export interface RebuildSource {
  position: number;
  store?: StoreEnv;
  /** Closes and deletes the downloaded snapshot. */
  dispose(): Promise<void>;
}

/** No snapshot reaches the log's first position (another server changes nothing). */
class NoSnapshotError extends Error {}

/** Reads of the snapshot per rebuild attempt. */
const SNAPSHOT_TRIES = 3;

/**
 * The state to rebuild from, given the log's first position. Throws when none reaches the log
 * or the snapshot could not be read in `tries`. A server that lost sight of JetStream's meta
 * leader answers the object store's requests with 503 although its leader elsewhere would serve
 * them, and a stopped node reads nothing else that would move it: a failed read is reported to
 * the link (`ClusterLink#snapshotReadFailed`), which moves it on.
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
      await link.snapshotReadFailed(err, attempt);
    }
  }
}

/** What a rebuild reads from NATS, as strings (equal: it would read the same): `full` is the
 * stream's leader, the log's bounds and the newest snapshot; `refusal` leaves out the log's last
 * position (a refusal is about confirmed history, which the log growing does not change). */
export interface RebuildInputs {
  full: string;
  refusal: string;
}

/** Reads what a rebuild reads from NATS (see `RebuildInputs`). */
export async function rebuildInputs(link: ClusterLink): Promise<RebuildInputs> {
  const [state, snapshot] = await Promise.all([
    link.bounds(),
    link.objectStore(SNAPSHOT_BUCKET).then((objects) => objects.info(SNAPSHOT_OBJECT)),
  ]);
  const newest = snapshot ? [snapshot.description, snapshot.nuid] : null;
  return {
    full: JSON.stringify([state.leader ?? null, state.first, state.last, newest]),
    refusal: JSON.stringify([state.leader ?? null, state.first, newest]),
  };
}

/**
 * Whether the next rebuild is held. A rebuild's outcome is a function of what it reads from NATS
 * (`RebuildInputs`, and the leader elections heard: a leader that lost the stream and won it
 * back may hold other messages) and, once the store is replaced, of the peers' reports: after a
 * rebuilt store was found disagreeing, rebuilding while these are unchanged would replay the log
 * into the same disagreement (run G1 in bench/results/: 14 replays of the whole log); after a
 * refusal, it would read the log into the same refusal (whose hold the log growing does not
 * end). Held, logged once, until one changes; a failed look counts as a change.
 */
export class RebuildHold {
  /** Stream leader elections heard (JetStream's advisories). */
  elections = 0;
  #link: ClusterLink;
  /** What the running rebuild read as it began (undefined: none runs, or unreadable). */
  #read: RebuildInputs | undefined;
  #hold: { peers?: string; read: string; logged: boolean; wanted?: number } | undefined;

  constructor(link: ClusterLink) {
    this.#link = link;
  }

  /** A rebuild begins: reads what it depends on first (a change meanwhile ends a later hold). */
  async begin(): Promise<void> {
    this.#read = await this.#inputs();
  }

  /** The rebuild is over: the node takes writes again. */
  end(): void {
    this.#read = undefined;
  }

  /** Whether a rebuild began (and is not over) with its inputs read. */
  get began(): boolean {
    return this.#read !== undefined;
  }

  /** Whether the hold was logged (it is then looked at every pause, no attempt counted). */
  get logged(): boolean {
    return this.#hold?.logged === true;
  }

  /** Holds the next rebuild: after a rebuilt store disagreed (`peers`: the inputs it was judged
   * by) or was refused (none); a snapshot reaching `wanted` is asked for at each look. */
  hold(why?: { peers?: string; wanted?: number }): void {
    const read = this.#read;
    this.#hold = why && read &&
      { ...why, read: why.peers === undefined ? read.refusal : read.full, logged: false };
  }

  /** Whether the next rebuild is still held, given the peers' inputs now. */
  async held(peers: () => string, applied: number): Promise<boolean> {
    const hold = this.#hold;
    if (!hold) return false;
    const read = (await this.#inputs())?.[hold.peers === undefined ? "refusal" : "full"];
    const now = hold.peers === undefined ? undefined : peers();
    if (this.#hold !== hold) return true; // stopped again meanwhile: that stop decides
    if (read !== undefined && read === hold.read && now === hold.peers) {
      if (hold.wanted !== undefined) wantSnapshot(this.#link, hold.wanted);
      if (!hold.logged) {
        hold.logged = true;
        log.warn(
          "cluster rebuild held: nothing it reads or is judged by has changed since its last attempt",
          { after: hold.peers === undefined ? "refused" : "disagreement", applied },
        );
      }
      return true;
    }
    this.#hold = undefined;
    if (hold.logged) {
      const changed = read === undefined ? "unknown" : read !== hold.read ? "log" : "peers";
      log.warn("cluster rebuild no longer held", { changed });
    }
    return false;
  }

  async #inputs(): Promise<RebuildInputs | undefined> {
    const elections = this.elections;
    const read = await rebuildInputs(this.#link).catch(() => undefined);
    return read && { full: `${read.full} ${elections}`, refusal: `${read.refusal} ${elections}` };
  }
}

/** One try of `rebuildSource`. */
async function sourceOnce(link: ClusterLink, first: number): Promise<RebuildSource> {
  const info = await (await link.objectStore(SNAPSHOT_BUCKET)).info(SNAPSHOT_OBJECT);
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
  let store: StoreEnv | undefined;
  const dispose = async () => {
    await store?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const got = await (await link.objectStore(SNAPSHOT_BUCKET)).get(SNAPSHOT_OBJECT);
    if (!got) throw new Error("the snapshot disappeared");
    const file = join(dir, "snapshot.mdb");
    await getFile(got, file);
    store = new StoreEnv(file, false);
    const position = store.db<number>(POSITION_DB).get("applied") ?? 0;
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

/** What the replacing commit needs of the live store. */
export interface LiveStore {
  root: RootDatabase;
  db(name: string): Database<unknown, Key>;
  /** Databases whose rows are this node's own: kept. */
  keep: Set<string>;
  /** Databases in `keep` that the apply keeps alike on every node: replaced like the rest. */
  replaced: string[];
}

/**
 * Replaces, in one local commit, every replicated database of `live` with `source`'s and records
 * `source.position` as applied, clearing the diverged mark; node-local databases are kept. Every
 * read of `source` happens inside the commit, and nothing there throws on purpose (lmdb-js would
 * commit what was put before a throw).
 */
export async function replaceStore(live: LiveStore, source: RebuildSource): Promise<void> {
  const names = (root: RootDatabase) =>
    [...root.getKeys()].filter((k): k is string => typeof k === "string");
  const replaced = new Set(live.replaced);
  const skip = (name: string) => live.keep.has(name) && !replaced.has(name);
  const sourceLocal = new Set(["cluster:node-local"]);
  for (const k of source.store?.db("cluster:node-local").getKeys() ?? []) {
    sourceLocal.add(k as string);
  }
  const liveNames = names(live.root).filter((n) => !skip(n));
  const sourceNames = source.store
    ? names(source.store.root).filter((n) => !skip(n) && !sourceLocal.has(n))
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
    live.db(POSITION_DB).put("applied", source.position);
    live.db(POSITION_DB).remove(DIVERGED_KEY);
  });
}
