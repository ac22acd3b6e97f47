/**
 * One writer per data directory: a lock file holding the owner's process id, taken at start
 * and removed at shutdown. A lock left by a process that no longer runs (a crash, SIGKILL) is
 * stale and taken over, so it never blocks a restart.
 */
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/** The lock file's name inside the data dir. */
export const LOCK_FILE = "switchboard.lock";

/** Another live process holds the data dir. */
export class DataDirLockedError extends Error {}

/** Whether `pid` is a running process other than this one. */
function running(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

/**
 * Takes the data dir's lock for this process; throws `DataDirLockedError` when a running
 * process holds it. Returns the release function (idempotent).
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: "wx" });
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(path, "utf8").trim() === String(process.pid)) unlinkSync(path);
        } catch { /* already gone */ }
      };
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(path, "utf8").trim());
    } catch { /* vanished meanwhile: retry */ }
    if (running(owner)) {
      throw new DataDirLockedError(`data dir ${dataDir} is in use by process ${owner}`);
    }
    try {
      unlinkSync(path); // stale: its owner is gone
    } catch { /* someone else removed it */ }
  }
  throw new DataDirLockedError(`data dir ${dataDir} is being locked by another process`);
}
