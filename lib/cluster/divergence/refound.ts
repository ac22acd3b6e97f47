/**
 * The operator's way back when every node refuses to rebuild (the log lost writes a majority
 * confirmed, as after nats-server 2.9.10's replicas numbered messages differently); offline,
 * every node stopped (docs/cluster.md, runbook):
 * - `switchboard cluster status --data-dir DIR [OTHER_DIR ...]`: what each store holds and,
 *   given copies of the other nodes' data dirs, whether each holds every other one's confirmed
 *   history, compared as the rebuild guard does (`guard.ts`): the base is one that holds them all.
 * - `switchboard cluster refound --data-dir DIR --nats URLS [OTHER_DIR ...]`: refuses while a
 *   node runs (the lock, or a heartbeat), when the store is not marked diverged, or when a store
 *   given beside it holds confirmed history it lacks. Else its copy (no diverged mark) becomes the
 *   only snapshot at its position A; the log is made again, empty, next position A + 1 (2.9.10
 *   has no `first_seq`: a purge to A + 1 moves an empty stream's first sequence there); last, the
 *   store drops its mark and lists every stream for the epoch renewal (`unsure.ts`). The others,
 *   started on their kept stores, rebuild from that snapshot.
 * A run that fails part way is run again (`SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER` crashes it
 * between the steps for tests).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { connect, type JetStreamManager, type NatsConnection, StorageType } from "nats";
import "../nats_transport.ts";
import { putFile } from "../object_put.ts";
import { ConfigError } from "../../config/config.ts";
import { StoreEnv, storePath } from "../../store/env.ts";
import { DataDirLockedError, lockDataDir } from "../../store/lock.ts";
import { firstConfirmedMismatch, type KeptHistory, keptHistory } from "./guard.ts";
import { LOG_STREAM, logStreamConfig } from "../link.ts";
import {
  CONFIRMED_KEY,
  DIVERGED_KEY,
  POSITION_DB,
  SNAPSHOT_BUCKET,
  SNAPSHOT_OBJECT,
  UNSURE_FROM_KEY,
  UNSURE_REPORT_KEY,
} from "./rebuild.ts";
import { readyRestored } from "../snapshots.ts";
import { newReport, PENDING_DB } from "./unsure.ts";
import { heartbeatSender, NODES_SUBJECT } from "../nodes.ts";

/** How long the refound listens for a heartbeat before it changes anything. */
const LISTEN_MS = 3500;
/** A replica its leader has not heard from this long (ns) is offline (2.9.10 sets no `offline`
 * flag for a killed server's replica; a live one's `active` stays under about 1.5 s). */
const SILENT_REPLICA_NS = 5e9;
/** How long a JetStream request is retried (a stream just made has no leader for a moment). */
const RETRY_MS = 30_000;
/** The marks a node sets when it stops itself, cleared from the new base. */
const MARKS = [DIVERGED_KEY, UNSURE_FROM_KEY, CONFIRMED_KEY, UNSURE_REPORT_KEY];

/** The exit code of a refound crashed by the fault hook (`exitAfter`). */
export const FAULT_EXIT_CODE = 70;

/** The fault hook: exits at once after `step` when `SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER` names
 * it (`snapshot`: stored, log untouched; `stream`: log made again, store still marked). */
function exitAfter(step: "snapshot" | "stream"): void {
  if (process.env.SWITCHBOARD_FAULT_REFOUND_EXIT_AFTER !== step) return;
  console.error(`switchboard: fault hook: cluster refound exits after the ${step} step`);
  process.exit(FAULT_EXIT_CODE);
}

/** What one store holds, as the status prints it. */
export interface StoreStatus {
  dir: string;
  applied: number;
  /** The diverged mark's reason (undefined: not marked). */
  diverged?: string;
  /** The last position a majority confirmed when it stopped (its whole store when unmarked). */
  confirmed: number;
  /** The lowest and highest positions it keeps a record of. */
  records: [number, number] | undefined;
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

/** Whether `base` holds `other`'s confirmed history, compared as the guard will when `other`
 * rebuilds from a snapshot of `base`: undefined when it does, else why not. */
export async function lacks(base: StoreStatus, other: StoreStatus): Promise<string | undefined> {
  if (other.confirmed <= 0) return undefined;
  if (base.applied < other.confirmed) {
    return `${other.dir} confirmed up to position ${other.confirmed}, past ${base.dir}'s position ${base.applied}`;
  }
  const upTo = <V>(m: Map<number, V>) => new Map([...m].filter(([s]) => s <= other.confirmed));
  const mismatch = await firstConfirmedMismatch({
    confirmed: other.confirmed,
    mine: { records: upTo(other.history.records), checkpoints: upTo(other.history.checkpoints) },
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

/** `switchboard cluster status`: the report printed for `dirs` (see the module comment). */
export async function clusterStatus(dirs: string[]): Promise<string> {
  const stores = await Promise.all(dirs.map(readStore));
  const lines: string[] = [];
  for (const s of stores) {
    const records = s.records ? `positions ${s.records[0]}-${s.records[1]}` : "none";
    lines.push(
      `${s.dir}:`,
      `  position applied:        ${s.applied}`,
      `  diverged:                ${s.diverged ? `yes (${s.diverged})` : "no"}`,
      `  confirmed by a majority: up to position ${s.confirmed}${
        s.diverged ? "" : " (not marked: its whole store)"
      }`,
      `  records kept:            ${records}`,
    );
  }
  if (stores.length > 1) {
    const bases: StoreStatus[] = [];
    for (const s of stores) {
      let all = true;
      for (const o of stores) {
        if (o === s) continue;
        const why = await lacks(s, o);
        if (why) all = false;
        lines.push(`${s.dir} holds ${o.dir}'s confirmed history: ${why ? `no (${why})` : "yes"}`);
      }
      if (all) bases.push(s);
    }
    lines.push(
      bases.length
        ? `re-found on: ${
          bases.sort((a, b) => b.applied - a.applied)[0].dir
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
  nats: string[];
  /** Copies of the other nodes' data dirs, checked before anything changes. */
  others: string[];
  /** How long to listen for a running node's heartbeat (ms). */
  listenMs?: number;
}

/** Retries `fn` while JetStream fails (a stream without a leader yet), for `RETRY_MS`. */
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

/** Running nodes heard on `sb.nodes` (heartbeats every second) within `ms`. */
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

/** `fn`, or undefined when the stream it reaches does not exist. */
async function unlessMissing<T>(fn: () => Promise<T>): Promise<T | undefined> {
  return await retried(async () => {
    try {
      return await fn();
    } catch (err) {
      if (/not found/i.test(String(err))) return undefined;
      throw err;
    }
  });
}

/** Removes the marks a stopped node set from the store at `path`, listing every stream for the
 * epoch renewal under `report` when given. */
async function clearMarks(path: string, report?: string): Promise<void> {
  const store = new StoreEnv(path, true);
  try {
    const state = store.db(POSITION_DB);
    const pending = report ? store.db(PENDING_DB) : undefined;
    await store.root.transaction(() => {
      for (const key of MARKS) state.remove(key);
      if (report) pending?.put([report, "", ""], "all");
    });
  } finally {
    await store.close();
  }
}

/** `switchboard cluster refound` (see the module comment): the lines to print; throws
 * ConfigError (nothing changed) when it refuses. */
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
    const jsm: JetStreamManager = await retried(() => nc!.jetstreamManager({ timeout: 2000 }));
    const replicas = logStreamConfig(nc).num_replicas;
    // Every replica of the old log up: one that comes back later could bring its old history.
    const old = await unlessMissing(() => jsm.streams.info(LOG_STREAM));
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

    // The snapshot: the store's copy without node-local rows and without the marks.
    const file = join(work, "snapshot.mdb");
    const source = new StoreEnv(storePath(opts.dataDir), false);
    try {
      await source.backup(file);
    } finally {
      await source.close();
    }
    const position = await readyRestored(file);
    await clearMarks(file);
    await unlessMissing(() => jsm.streams.delete(`OBJ_${SNAPSHOT_BUCKET}`));
    const js = nc.jetstream();
    const options = { replicas, storage: StorageType.File };
    const meta = { name: SNAPSHOT_OBJECT, description: String(position) };
    await retried(() => putFile(js, SNAPSHOT_BUCKET, options, meta, file));
    const objects = await retried(() => js.views.os(SNAPSHOT_BUCKET, options));
    const info = await retried(() => objects.info(SNAPSHOT_OBJECT));
    if (Number(info?.description) !== position) {
      throw new Error(`the snapshot reads back at ${info?.description}, not ${position}`);
    }
    exitAfter("snapshot");

    // The log, empty, its next position right after the snapshot's.
    await unlessMissing(() => jsm.streams.delete(LOG_STREAM));
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

    // Last, the store itself: the base, every stream's epoch renewed once it takes writes.
    const report = newReport("refound");
    await clearMarks(storePath(opts.dataDir), report);
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
