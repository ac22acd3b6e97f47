/**
 * One writer per data directory: a lock file naming its owner, taken at start and removed at
 * shutdown. The owner is named by identity, not by process id alone: `pid`, the process's
 * start time (field 22 of `/proc/<pid>/stat`) and the boot id. A lock whose owner is not that
 * very process (it died, even if it is a zombie its parent has not collected yet: state `Z` in
 * `/proc/<pid>/stat`; the machine rebooted; or the id now belongs to an unrelated process) is
 * stale and taken over, so a dead server can never leave a lock behind; a live owner still
 * refuses a second server. A lock holding only a pid (written by an older version) is its
 * owner's while that pid runs the same executable.
 *
 * Why not `flock`: the binary is built by Bun, which exposes no file lock, and Deno's
 * `FsFile.lock` exists only under Deno; the identity check works the same in both. Without
 * `/proc` (macOS) the lock falls back to the process id alone.
 */
import { readFileSync, realpathSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/** The lock file's name inside the data dir. */
export const LOCK_FILE = "switchboard.lock";

/** Another live process holds the data dir. */
export class DataDirLockedError extends Error {}

/** Who holds a lock: the first line of the file is the pid (older files hold only that). */
interface Owner {
  pid: number;
  /** Start time of the process in clock ticks since boot; undefined when unknown. */
  start?: string;
  boot?: string;
}

/** The start time of `pid` (clock ticks since boot), or undefined without `/proc`. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19]; // field 22 overall
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a zombie (`Z`) or dead (`X`, `x`) by the state in `/proc/<pid>/stat`: it
 * has exited and only waits for its parent to collect it. False without `/proc`. */
export function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X" || state === "x";
  } catch {
    return false;
  }
}

/** This boot's id, or undefined without `/proc`. */
function bootId(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** This process as a lock owner. */
function self(): Owner {
  return { pid: process.pid, start: processStart(process.pid), boot: bootId() };
}

function format(o: Owner): string {
  return [o.pid, o.start ?? "", o.boot ?? ""].join("\n") + "\n";
}

function parse(text: string): Owner {
  const [pid, start, boot] = text.split("\n").map((l) => l.trim());
  return { pid: Number(pid), start: start || undefined, boot: boot || undefined };
}

/** Whether a process with `pid` exists (other than this one). */
function exists(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

/**
 * Whether `pid` runs the same executable as this process (a pid-only lock: an unrelated live
 * process that got the id is not its owner). True when it cannot be told (no `/proc`, EACCES).
 */
function sameProgram(pid: number): boolean {
  try {
    return realpathSync(`/proc/${pid}/exe`) === realpathSync(process.execPath);
  } catch {
    return true;
  }
}

/** Whether the lock's owner is still the live process that wrote it. */
export function ownerAlive(o: Owner): boolean {
  if (!exists(o.pid)) return false;
  if (exited(o.pid)) return false; // a zombie: killed, not yet collected by its parent
  const boot = bootId();
  if (o.boot !== undefined && boot !== undefined && o.boot !== boot) return false; // rebooted
  if (o.start === undefined) return sameProgram(o.pid); // a pid-only lock (older versions)
  const start = processStart(o.pid);
  return start === undefined || start === o.start;
}

/**
 * Takes the data dir's lock for this process; throws `DataDirLockedError` when its live owner
 * holds it. Returns the release function (idempotent).
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  const me = format(self());
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, me, { flag: "wx" });
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(path, "utf8") === me) unlinkSync(path);
        } catch { /* already gone */ }
      };
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
    }
    let text: string | undefined;
    try {
      text = readFileSync(path, "utf8");
    } catch { /* vanished meanwhile: retry */ }
    if (text === undefined) continue;
    const owner = parse(text);
    if (ownerAlive(owner)) {
      throw new DataDirLockedError(`data dir ${dataDir} is in use by process ${owner.pid}`);
    }
    try {
      // Stale: its owner is gone. Removed only if still the same stale file (another starter
      // may have taken it over meanwhile).
      if (readFileSync(path, "utf8") === text) unlinkSync(path);
    } catch { /* someone else removed it */ }
  }
  throw new DataDirLockedError(`data dir ${dataDir} is being locked by another process`);
}
