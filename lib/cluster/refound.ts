/**
 * The operator's way back when every node refuses to rebuild (`confirmed_guard.ts`: the log no
 * longer holds writes a majority confirmed, as after nats-server 2.9.10's replicas numbered the
 * same messages differently). Two offline commands, run with every node stopped:
 *
 * - `switchboard cluster status --data-dir DIR [OTHER_DIR ...]` (`clusterStatus`): what each
 *   store holds (position applied, diverged mark, the last position a majority confirmed, the
 *   positions it keeps a record of) and, given several stores (copies of the other nodes' data
 *   dirs), whether each holds every other one's confirmed history, compared as the guard does
 *   (batch ids of the kept records and the chained digests): the store to re-found on is one
 *   that holds them all.
 * - `switchboard cluster refound --data-dir DIR --nats URLS [OTHER_DIR ...]` (`refound`): makes
 *   that store the new base of the log. It refuses while a node runs (the data dir's lock, or a
 *   heartbeat on `sb.nodes`), when the store is not marked diverged, and when a store given
 *   beside it holds confirmed history it lacks. Else: the store's copy, without its node-local
 *   databases and its diverged mark, becomes the only snapshot (the object store
 *   `sb-snapshots` is emptied first) at its position A; the log stream is deleted and made
 *   again, empty, starting at A + 1 (nats-server 2.9.10 has no `first_seq`: a purge up to
 *   A + 1 moves an empty stream's first sequence there; log positions are stream sequences);
 *   and, last, the store itself drops its diverged mark and lists every stream for the epoch
 *   renewal (`unsure.ts`, a report naming every stream), so every subscriber resumes with a
 *   fresh snapshot, whatever history it was sent. The other nodes, started on their kept
 *   stores, rebuild from that snapshot through `rebuild.ts`, and the guard checks that it
 *   holds their confirmed history.
 *
 * A run that fails part way is run again: each run does the whole (the fault hook
 * `SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER`, `exitAfter`, lets tests/cluster/refound_crash_test.ts
 * crash it between the steps).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { connect, type JetStreamManager, type NatsConnection, StorageType } from "nats";
import "./nats_transport.ts";
import { putFile } from "./object_put.ts";
import type { Database, Key } from "lmdb";
import { ConfigError } from "../config/config.ts";
import { StoreEnv, storePath } from "../store/env.ts";
import { DataDirLockedError, lockDataDir } from "../store/lock.ts";
import {
  firstConfirmedMismatch,
  type KeptHistory,
  type PositionRecord,
} from "./confirmed_guard.ts";
import { LOG_STREAM, logStreamConfig } from "./link.ts";
import { DIVERGED_KEY, SNAPSHOT_BUCKET, SNAPSHOT_OBJECT } from "./rebuild.ts";
import {
  CONFIRMED_KEY,
  POSITION_DB,
  UNSURE_FROM_KEY,
  UNSURE_REPORT_KEY,
} from "./replicated_env.ts";
import { readyRestored } from "./snapshots.ts";
import { newReport, PENDING_DB } from "./unsure.ts";
import { heartbeatSender, NODES_SUBJECT } from "./nodes.ts";

/** How long the refound listens for a heartbeat before it changes anything. */
const LISTEN_MS = 3500;
/** A replica its leader has not heard from for this long (ns) counts as offline: nats-server
 * 2.9.10 sets no `offline` flag for a killed server's replica, only its `active` grows (a live
 * replica's stays under about 1.5 s). */
const SILENT_REPLICA_NS = 5e9;
/** How long a JetStream request is retried (a stream just made has no leader for a moment). */
const RETRY_MS = 30_000;

/** The exit code of a refound crashed by the fault hook (`exitAfter`). */
export const FAULT_EXIT_CODE = 70;

/**
 * The fault hook `SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER` (tests only): when it names `step`
 * (`snapshot`: the snapshot stored, the log untouched; `stream`: the log made again and purged,
 * the store still marked), the process exits there at once, as a crash would: nothing is closed,
 * released or removed.
 */
function exitAfter(step: "snapshot" | "stream"): void {
  if (process.env.SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER !== step) return;
  console.error(`switchboard: fault hook: cluster refound exits after the ${step} step`);
  process.exit(FAULT_EXIT_CODE);
}

/** What one store holds, as the status prints it. */
export interface StoreStatus {
  dir: string;
  /** The log position applied. */
  applied: number;
  /** The diverged mark's reason (undefined: not marked). */
  diverged?: string;
  /** The last position a majority confirmed when it stopped (0: none known). */
  confirmed: number;
  /** The lowest and highest positions it keeps a record of. */
  records: [number, number] | undefined;
  /** Its history: records and chained-digest checkpoints. */
  history: KeptHistory;
}

/** Reads the status of the store in `dataDir` (read-only). Throws ConfigError without one. */
export async function readStore(dataDir: string): Promise<StoreStatus> {
  const path = storePath(dataDir);
  if (!existsSync(path)) throw new ConfigError(`no store at ${path}`);
  const store = new StoreEnv(path, false);
  try {
    const state = store.db<string | number>(POSITION_DB);
    const applied = Number(state.get("applied") ?? 0);
    const marked = state.get(DIVERGED_KEY);
    const from = state.get(UNSURE_FROM_KEY);
    const confirmed = Number(
      state.get(CONFIRMED_KEY) ?? (from !== undefined ? Number(from) - 1 : 0),
    );
    const history = keptHistory(store.db("cluster:recent"), store.db("cluster:chain"));
    const seqs = [...history.records.keys()];
    return {
      dir: dataDir,
      applied,
      diverged: marked === undefined ? undefined : String(marked),
      confirmed: marked === undefined ? applied : confirmed,
      records: seqs.length ? [Math.min(...seqs), Math.max(...seqs)] : undefined,
      history,
    };
  } finally {
    await store.close();
  }
}

/** A store's kept history, as the guard reads it (`replicated_env.ts` `#refused`). */
function keptHistory(recent: Database<unknown, Key>, chain: Database<unknown, Key>): KeptHistory {
  const records = new Map<number, PositionRecord>();
  for (const { key, value } of recent.getRange()) {
    const { b, c } = Array.isArray(value) ? {} : (value as { b?: string; c?: string });
    if (typeof key === "number" && b !== undefined) {
      records.set(key, c === undefined ? { b } : { b, c });
    }
  }
  const checkpoints = new Map<number, string>();
  for (const { key, value } of chain.getRange()) {
    if (typeof key === "number" && typeof value === "string") checkpoints.set(key, value);
  }
  return { records, checkpoints };
}

/**
 * Whether `base` holds `other`'s confirmed history, compared as the guard will compare it when
 * `other` rebuilds from a snapshot of `base`: undefined when it does, else why not.
 */
export async function lacks(base: StoreStatus, other: StoreStatus): Promise<string | undefined> {
  if (other.confirmed <= 0) return undefined;
  if (base.applied < other.confirmed) {
    return `${other.dir} confirmed up to position ${other.confirmed}, past ${base.dir}'s position ${base.applied}`;
  }
  const upTo = (h: KeptHistory): KeptHistory => ({
    records: new Map([...h.records].filter(([s]) => s <= other.confirmed)),
    checkpoints: new Map([...h.checkpoints].filter(([s]) => s <= other.confirmed)),
  });
  const mismatch = await firstConfirmedMismatch({
    confirmed: other.confirmed,
    mine: upTo(other.history),
    sourcePosition: base.applied,
    source: base.history,
    read: () => Promise.resolve(undefined),
  });
  if (!mismatch) return undefined;
  const where = mismatch.chained
    ? `at or before position ${mismatch.seq}`
    : `at position ${mismatch.seq}`;
  return `${base.dir} holds another history than ${other.dir} confirmed, ${where}`;
}

/** The stores among `stores` that hold every other one's confirmed history. */
async function bases(stores: StoreStatus[]): Promise<StoreStatus[]> {
  const out: StoreStatus[] = [];
  for (const s of stores) {
    const missing = await Promise.all(stores.filter((o) => o !== s).map((o) => lacks(s, o)));
    if (missing.every((m) => m === undefined)) out.push(s);
  }
  return out;
}

/** `switchboard cluster status`: the report printed for `dirs` (see the module comment). */
export async function clusterStatus(dirs: string[]): Promise<string> {
  const stores = await Promise.all(dirs.map(readStore));
  const lines: string[] = [];
  for (const s of stores) {
    lines.push(`${s.dir}:`);
    lines.push(`  position applied:        ${s.applied}`);
    lines.push(`  diverged:                ${s.diverged ? `yes (${s.diverged})` : "no"}`);
    lines.push(
      `  confirmed by a majority: up to position ${s.confirmed}${
        s.diverged ? "" : " (not marked: its whole store)"
      }`,
    );
    lines.push(
      `  records kept:            ${
        s.records ? `positions ${s.records[0]}-${s.records[1]}` : "none"
      }`,
    );
  }
  if (stores.length > 1) {
    for (const s of stores) {
      for (const o of stores) {
        if (o === s) continue;
        const why = await lacks(s, o);
        lines.push(`${s.dir} holds ${o.dir}'s confirmed history: ${why ? `no (${why})` : "yes"}`);
      }
    }
    const ok = await bases(stores);
    lines.push(
      ok.length
        ? `re-found on: ${
          ok.sort((a, b) => b.applied - a.applied)[0].dir
        } (holds every confirmed history given)`
        : "re-found on: none of these (no store holds every confirmed history given; do not re-found)",
    );
  }
  return lines.join("\n");
}

/** What a refound needs. */
export interface RefoundOptions {
  /** The chosen node's data dir. */
  dataDir: string;
  /** NATS server URLs. */
  nats: string[];
  /** Copies of the other nodes' data dirs, checked before anything changes. */
  others: string[];
  /** How long to listen for a running node's heartbeat (ms). */
  listenMs?: number;
}

/** Retries `fn` while JetStream answers 503 or times out (a stream without a leader yet). */
async function retried<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + RETRY_MS;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Running nodes heard on `sb.nodes` (their heartbeats, `nodes.ts`, every second) within `ms`. */
async function runningNodes(nc: NatsConnection, ms: number): Promise<string[]> {
  const heard = new Set<string>();
  const sub = nc.subscribe(NODES_SUBJECT, {
    callback: (_err, msg) => {
      try {
        heard.add(heartbeatSender(msg.data));
      } catch {
        heard.add("a node");
      }
    },
  });
  await new Promise((r) => setTimeout(r, ms));
  sub.unsubscribe();
  return [...heard];
}

/** Deletes stream `name`, if it exists. */
async function deleteStream(jsm: JetStreamManager, name: string): Promise<void> {
  await retried(async () => {
    try {
      await jsm.streams.delete(name);
    } catch (err) {
      if (/not found/i.test(String(err))) return;
      throw err;
    }
  });
}

/**
 * `switchboard cluster refound` (see the module comment). Returns the lines to print; throws
 * ConfigError (nothing changed) when it refuses.
 */
export async function refound(opts: RefoundOptions): Promise<string> {
  const chosen = await readStore(opts.dataDir);
  if (!chosen.diverged) {
    throw new ConfigError(
      `${opts.dataDir}: the store is not marked diverged; a refound is for a cluster whose every node refuses to rebuild (nothing changed)`,
    );
  }
  for (const dir of opts.others) {
    const why = await lacks(chosen, await readStore(dir));
    if (why) {
      throw new ConfigError(
        `refusing to re-found on ${opts.dataDir}: ${why} (nothing changed; see switchboard cluster status)`,
      );
    }
  }
  let release: () => void;
  try {
    release = lockDataDir(opts.dataDir);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      throw new ConfigError(`${err.message}: stop every node first (nothing changed)`);
    }
    throw err;
  }
  const work = mkdtempSync(join(tmpdir(), "sb-refound-"));
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: opts.nats, timeout: 5000 });
    const running = await runningNodes(nc, opts.listenMs ?? LISTEN_MS);
    if (running.length) {
      throw new ConfigError(
        `nodes still running: ${
          running.sort().join(", ")
        }; stop every node first (nothing changed)`,
      );
    }
    const jsm = await retried(() => nc!.jetstreamManager({ timeout: 2000 }));
    const replicas = logStreamConfig(nc).num_replicas;
    // Every replica of the old log up: one that comes back later could bring its old history.
    const old = await retried(async () => {
      try {
        return await jsm.streams.info(LOG_STREAM);
      } catch (err) {
        if (/not found/i.test(String(err))) return undefined;
        throw err;
      }
    });
    const offline = (old?.cluster?.replicas ?? []).filter((r) =>
      r.offline || (r.active ?? 0) > SILENT_REPLICA_NS
    ).map((r) => r.name);
    if (offline.length) {
      throw new ConfigError(
        `the log's replicas on ${
          offline.join(", ")
        } are offline: start every nats-server first (nothing changed)`,
      );
    }

    // The snapshot: the store's copy without node-local rows and without the diverged mark.
    const file = join(work, "snapshot.mdb");
    const source = new StoreEnv(storePath(opts.dataDir), false);
    try {
      await source.backup(file);
    } finally {
      await source.close();
    }
    const position = await readyRestored(file);
    const copy = new StoreEnv(file, false);
    try {
      const state = copy.db(POSITION_DB);
      for (const key of [DIVERGED_KEY, UNSURE_FROM_KEY, CONFIRMED_KEY, UNSURE_REPORT_KEY]) {
        state.removeSync(key);
      }
    } finally {
      await copy.close();
    }

    // The only snapshot, at the store's position.
    await deleteStream(jsm, `OBJ_${SNAPSHOT_BUCKET}`);
    const js = nc.jetstream();
    const options = { replicas, storage: StorageType.File };
    await retried(() =>
      putFile(js, SNAPSHOT_BUCKET, options, {
        name: SNAPSHOT_OBJECT,
        description: String(position),
      }, file)
    );
    const objects = await retried(() => js.views.os(SNAPSHOT_BUCKET, options));
    const info = await retried(() => objects.info(SNAPSHOT_OBJECT));
    if (Number(info?.description) !== position) {
      throw new Error(`the snapshot reads back at ${info?.description}, not ${position}`);
    }
    exitAfter("snapshot");

    // The log, empty, its next position right after the snapshot's.
    await deleteStream(jsm, LOG_STREAM);
    await retried(() => jsm.streams.add(logStreamConfig(nc!)));
    if (position > 0) await retried(() => jsm.streams.purge(LOG_STREAM, { seq: position + 1 }));
    const { state } = await retried(() => jsm.streams.info(LOG_STREAM));
    if (state.first_seq !== position + 1 || state.messages !== 0) {
      throw new Error(
        `the new log starts at ${state.first_seq} with ${state.messages} messages, not empty at ${
          position + 1
        }`,
      );
    }
    exitAfter("stream");

    // Last, the store itself: it is the base; every stream's epoch is renewed once it takes
    // writes (a report naming every stream, `unsure.ts`).
    const store = new StoreEnv(storePath(opts.dataDir), true);
    const report = newReport("refound");
    try {
      const state = store.db(POSITION_DB);
      const pending = store.db(PENDING_DB);
      await store.root.transaction(() => {
        for (const key of [DIVERGED_KEY, UNSURE_FROM_KEY, CONFIRMED_KEY, UNSURE_REPORT_KEY]) {
          state.remove(key);
        }
        pending.put([report, "", ""], "all");
      });
    } finally {
      await store.close();
    }
    return [
      `re-founded the cluster log on ${opts.dataDir} at position ${position}`,
      `  snapshot ${SNAPSHOT_BUCKET}/${SNAPSHOT_OBJECT} at position ${position}; log ${LOG_STREAM} empty, next position ${
        position + 1
      }`,
      `  every stream's epoch is renewed once the cluster takes writes (report ${report})`,
      "  now start this node, then every other node on its kept data dir",
    ].join("\n");
  } finally {
    await nc?.close().catch(() => {});
    rmSync(work, { recursive: true, force: true });
    release();
  }
}
