// One writer per data directory: a second server on the same --data-dir refuses to start with
// one line; a lock left by a killed server does not block a restart.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serverCommand, startServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

Deno.test("data dir lock: a second server refuses with one line; a SIGKILLed owner's lock is taken over", async () => {
  const first = await startServer();
  try {
    const { cmd, args } = serverCommand();
    const out = await new Deno.Command(cmd, {
      args: [...args, "--port", "0", "--host", "127.0.0.1", "--data-dir", first.dataDir],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 2);
    assert.match(stderr, /^switchboard: data dir .+ is in use by process \d+$/);
    assert.equal(stderr.split("\n").length, 1);
  } finally {
    await first.kill();
  }
  // The killed server's lock file is still there; a restart takes it over.
  assert.ok(existsSync(join(first.dataDir, "switchboard.lock")));
  const again = await startServer({ dataDir: first.dataDir });
  try {
    const res = await fetch(`${again.baseUrl}/healthz`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await again.stop();
  }
});

/** The state letter of `pid` in /proc/<pid>/stat (R, S, Z, ...), or undefined when gone. */
function procState(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  } catch {
    return undefined;
  }
}

Deno.test("data dir lock: a SIGKILLed server left a zombie (its parent never collects it): a restart still starts", async () => {
  const dataDir = tempDir("sb-zombie-");
  const { cmd, args } = serverCommand();
  const quoted = [cmd, ...args, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir]
    .map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
  // The parent starts the server in the background, prints its pid, then becomes `sleep`
  // (exec), which never waits for children: the killed server stays a zombie.
  const parent = new Deno.Command("sh", {
    args: ["-c", `${quoted} >/dev/null 2>&1 & echo $!; exec sleep 120`],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = parent.stdout.getReader();
  let again: Awaited<ReturnType<typeof startServer>> | undefined;
  let pid = 0;
  try {
    const { value } = await reader.read();
    pid = Number(new TextDecoder().decode(value).trim());
    assert.ok(pid > 0, "the parent printed the server's pid");
    const lock = join(dataDir, "switchboard.lock");
    const deadline = Date.now() + 60_000;
    while (!(existsSync(lock) && Deno.readTextFileSync(lock).startsWith(`${pid}\n`))) {
      assert.ok(Date.now() < deadline, "the server took the lock");
      await new Promise((r) => setTimeout(r, 50));
    }
    Deno.kill(pid, "SIGKILL");
    while (procState(pid) !== "Z") {
      assert.ok(Date.now() < deadline, "the killed server became a zombie");
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(existsSync(lock), "the zombie's lock file is still there");
    again = await startServer({ dataDir });
    const res = await fetch(`${again.baseUrl}/healthz`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(procState(pid), "Z", "the owner was still a zombie when the restart started");
  } finally {
    await again?.stop();
    if (pid > 0) {
      try {
        Deno.kill(pid, "SIGKILL"); // a failure before the kill above leaves no server behind
      } catch { /* already gone (a zombie ignores it) */ }
    }
    reader.releaseLock();
    await parent.stdout.cancel().catch(() => {});
    parent.kill("SIGKILL");
    await parent.status;
  }
});
