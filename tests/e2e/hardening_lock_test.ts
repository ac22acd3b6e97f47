// One writer per data directory: a second server on the same --data-dir refuses to start with
// one line; a lock left by a killed server does not block a restart.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serverCommand, startServer } from "../helpers/server.ts";

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
