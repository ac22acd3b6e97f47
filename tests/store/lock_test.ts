// The data-dir lock names its owner by pid, start time and boot id: a lock whose pid now
// belongs to another process (or to none) is stale and taken over; the live owner keeps it.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import {
  DataDirLockedError,
  exited,
  LOCK_FILE,
  lockDataDir,
  processStart,
} from "../../lib/store/lock.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** A live process that is not a Switchboard server (and not this one). */
function sleeper(): Deno.ChildProcess {
  return new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
}

Deno.test("lock: written with pid, start time and boot id; released on release", () => {
  const dir = tempDir("sb-lock-");
  const release = lockDataDir(dir);
  const [pid, start] = readFileSync(join(dir, LOCK_FILE), "utf8").split("\n");
  assert.equal(Number(pid), process.pid);
  assert.equal(start, processStart(process.pid));
  release();
  assert.throws(() => readFileSync(join(dir, LOCK_FILE)));
});

Deno.test("lock: a lock naming a live unrelated process (pid reused) is stale and taken over", async () => {
  const child = sleeper();
  try {
    const dir = tempDir("sb-lock-");
    const start = processStart(child.pid)!;
    assert.ok(start, "this test needs /proc");
    // The recorded start time is not that of the process now holding the pid.
    writeFileSync(join(dir, LOCK_FILE), `${child.pid}\n${Number(start) - 1}\n\n`);
    lockDataDir(dir)();
    // A pid-only lock (older versions) naming a process of another program: stale too.
    writeFileSync(join(dir, LOCK_FILE), `${child.pid}\n`);
    lockDataDir(dir)();
    // A dead owner (a pid no process has).
    writeFileSync(join(dir, LOCK_FILE), `999999999\n1\n\n`);
    lockDataDir(dir)();
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("lock: the live owner (pid and start time match) still refuses a second locker", async () => {
  const child = sleeper();
  try {
    const dir = tempDir("sb-lock-");
    writeFileSync(join(dir, LOCK_FILE), `${child.pid}\n${processStart(child.pid)}\n\n`);
    assert.throws(
      () => lockDataDir(dir),
      (e) =>
        e instanceof DataDirLockedError &&
        e.message === `data dir ${dir} is in use by process ${child.pid}`,
    );
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("lock: a lock whose owner is a zombie (killed, not yet collected by its parent) is stale", async () => {
  // `sh` starts `sleep` in the background and execs into a `sleep` that never reaps it.
  const parent = new Deno.Command("sh", {
    args: ["-c", "sleep 60 & echo $!; exec sleep 60"],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = parent.stdout.getReader();
  let pid = 0;
  try {
    pid = Number(new TextDecoder().decode((await reader.read()).value).trim());
    const start = processStart(pid);
    assert.ok(start, "this test needs /proc");
    const dir = tempDir("sb-lock-");
    writeFileSync(join(dir, LOCK_FILE), `${pid}\n${start}\n\n`);
    assert.throws(() => lockDataDir(dir), DataDirLockedError, "alive: the lock holds");
    process.kill(pid, "SIGKILL");
    const deadline = Date.now() + 30_000;
    while (!exited(pid)) {
      assert.ok(Date.now() < deadline, "the killed child became a zombie");
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(processStart(pid), start, "the zombie keeps its pid and start time");
    lockDataDir(dir)();
  } finally {
    if (pid > 0) {
      try {
        process.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
    reader.releaseLock();
    await parent.stdout.cancel().catch(() => {});
    parent.kill("SIGKILL");
    await parent.status;
  }
});
