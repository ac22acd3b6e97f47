// Store-alone experiment for issue 39's 10k-objects bound: would a sequential write-ahead log
// (one append + fdatasync of one file per commit group, LMDB applied behind it without its
// own sync) beat the LMDB commit the server does today? Runs commit groups back to back for a
// few seconds per cell, in one Bun process over fresh temp dirs on the local disk, and prints one
// JSON line per cell: commits/s, writes/s, wall ms per commit, and CPU per write of the whole
// process (every thread, kernel time included, from /proc) and of this (JavaScript) thread.
//
// Modes (each a commit group of `n` log entries, keyed [stream, position] like an object's log,
// ~60-byte msgpack values like an increment's entry, over `streams` streams picked at random):
//   lmdb       the server's commit today: `root.batch` of n puts, `overlappingSync: false`
//              (page writes, fdatasync, the meta page's synchronous write), awaited
//   wal        n length-prefixed records appended to one preallocated file with one `writeSync`,
//              then `fdatasyncSync` (what Redis's `appendfsync always` does per event-loop turn)
//   wal-grow   the same on a file that grows (each sync also commits the inode's size)
//   wal+lmdb   `wal`, then the same n puts applied to LMDB opened with `overlappingSync: true`
//              (committed without waiting for its sync, which lmdb-js runs behind), awaited:
//              what the write-ahead design pays per group when LMDB stays crash-consistent
//   wal+nosync `wal`, then the n puts into LMDB opened with `noSync: true` (no sync at all; an
//              OS crash may corrupt such a file, so this is a lower bound, not a design)
//   nometa     the server's commit with `noMetaSync: true` (data pages synced, the meta page
//              written without its own sync: one sync per commit, the last commit undone by an
//              OS crash until the next one syncs), for scale
//   nosync     the LMDB apply alone, `noSync: true`: what a group costs LMDB before any sync
// Config as JSON in the first argument:
//   bun bench/baselines/wal_vs_lmdb.ts '{"streams":10000,"sizes":[1,32,64,128],"seconds":2}'
import {
  closeSync,
  fdatasyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, type RootDatabase } from "lmdb";
import { CODEC_OPTIONS } from "../../lib/store/codec.ts";

const cfg = {
  streams: 10_000,
  sizes: [1, 32, 64, 128],
  seconds: 2,
  modes: ["lmdb", "wal", "wal-grow", "wal+lmdb", "wal+nosync", "nometa", "nosync"],
  ...JSON.parse(process.argv[2] ?? "{}"),
};

/** CPU seconds (utime + stime) of this process, or of its main (JavaScript) thread. */
function cpu(thread: boolean): number {
  const stat = readFileSync(
    thread ? `/proc/self/task/${process.pid}/stat` : "/proc/self/stat",
    "utf8",
  );
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

const WAL_BYTES = 256 * 1024 * 1024;

/** A fresh LMDB environment and its log database, prefilled with 4 entries per stream so the
 * tree has the shape of a store that has been written for a while. */
async function openLog(dir: string, options: Record<string, unknown>) {
  const root: RootDatabase = open({
    path: join(dir, "db"),
    maxDbs: 8,
    encoding: "msgpack",
    ...CODEC_OPTIONS,
    ...options,
  });
  const db = root.openDB({ name: "log", encoding: "msgpack", ...CODEC_OPTIONS });
  const heads = new Array<number>(cfg.streams).fill(0);
  await root.batch(() => {
    for (let s = 0; s < cfg.streams; s++) {
      for (let i = 0; i < 4; i++) {
        db.put([`durable:app-1:bench:o${s}`, ++heads[s]], entry(heads[s]));
      }
    }
  });
  await root.flushed;
  return { root, db, heads };
}

/** An increment's log entry: `[time, [batch, op, key, value]]`. */
function entry(n: number): unknown {
  return [Date.now(), [false, "set", "n", n]];
}

/** A preallocated (zero-filled, synced) log file, or an empty one that grows. */
function openWal(dir: string, grow: boolean): number {
  const fd = openSync(join(dir, "wal"), "w+");
  if (!grow) {
    const zeros = Buffer.alloc(4 * 1024 * 1024);
    for (let off = 0; off < WAL_BYTES; off += zeros.length) {
      writeSync(fd, zeros, 0, zeros.length, off);
    }
    fdatasyncSync(fd);
  }
  return fd;
}

let seed = 12345;
function pick(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % cfg.streams;
}

/** Runs one mode at one group size for `cfg.seconds`; one JSON line. */
async function cell(mode: string, n: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-wal-"));
  const lmdbOpts = mode === "lmdb"
    ? { overlappingSync: false }
    : mode === "nometa"
    ? { overlappingSync: false, noMetaSync: true }
    : mode === "wal+lmdb"
    ? { overlappingSync: true }
    : mode === "wal+nosync" || mode === "nosync"
    ? { noSync: true, overlappingSync: false }
    : undefined;
  const log = lmdbOpts ? await openLog(dir, lmdbOpts) : undefined;
  const fd = mode.startsWith("wal") ? openWal(dir, mode === "wal-grow") : -1;
  const buf = Buffer.alloc(n * 96);
  let walAt = 0;
  let commits = 0;
  let writes = 0;
  const one = async () => {
    const streams = Array.from({ length: n }, pick);
    if (fd >= 0) {
      // A record: 4-byte length, then the stream, position and entry as text (~60-80 bytes).
      let at = 0;
      for (const s of streams) {
        const pos = log ? log.heads[s] + 1 : commits;
        const text = JSON.stringify([`durable:app-1:bench:o${s}`, pos, entry(pos)]);
        const len = buf.write(text, at + 4);
        buf.writeUInt32LE(len, at);
        at += 4 + len;
      }
      if (walAt + at > WAL_BYTES) walAt = 0;
      writeSync(fd, buf, 0, at, mode === "wal-grow" ? null : walAt);
      walAt += at;
      fdatasyncSync(fd);
    }
    if (log) {
      await log.root.batch(() => {
        for (const s of streams) {
          log.db.put([`durable:app-1:bench:o${s}`, ++log.heads[s]], entry(log.heads[s]));
        }
      });
    }
    commits++;
    writes += n;
  };
  const warm = performance.now() + 300;
  while (performance.now() < warm) await one();
  const [c0, w0, p0, t0, s0] = [commits, writes, cpu(false), cpu(true), performance.now()];
  const end = s0 + cfg.seconds * 1000;
  while (performance.now() < end) await one();
  const [c1, w1, p1, t1, s1] = [commits, writes, cpu(false), cpu(true), performance.now()];
  if (fd >= 0) closeSync(fd);
  await log?.root.close();
  rmSync(dir, { recursive: true, force: true });
  const secs = (s1 - s0) / 1000;
  const w = w1 - w0;
  console.log(JSON.stringify({
    mode,
    streams: cfg.streams,
    perCommit: n,
    commitsPerSecond: Math.round((c1 - c0) / secs),
    writesPerSecond: Math.round(w / secs),
    msPerCommit: Math.round((secs * 1000 / (c1 - c0)) * 1000) / 1000,
    processUsPerWrite: Math.round(((p1 - p0) / w) * 1e7) / 10,
    threadUsPerWrite: Math.round(((t1 - t0) / w) * 1e7) / 10,
  }));
}

for (const n of cfg.sizes) for (const mode of cfg.modes) await cell(mode, n);
