// Issue 12 item 5: with a full disk, writes fail with a clear 503 and keep nothing, while reads,
// joins and live delivery go on; writes resume when space returns. Runs on a small tmpfs
// (mounting needs root, as in CI).
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";

async function sh(cmd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (out.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

Deno.test("disk full: writes answer 503 and keep nothing, reads and live delivery go on, writes resume", async () => {
  const mnt = await Deno.makeTempDir({ prefix: "sb-tmpfs-" });
  await sh("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt);
  const server = await startServer({ dataDir: `${mnt}/data` });
  const sub = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const obj = `${server.baseUrl}/api/v1/objects/app-1/doc/full`;
    const put = (slot: string, value: unknown) =>
      fetch(`${obj}/${slot}`, {
        method: "PUT",
        headers: server.headers(),
        body: JSON.stringify({ value }),
      });
    assert.equal((await put("a", 1)).status, 200);
    const joined = await sub.join("durable:key1:doc:full", { app_secret: "secret1" });
    assert.equal(joined.response.log_id, 1);

    // Fill the disk with a file we can delete later, then write until storage refuses.
    const filler = `${mnt}/filler`;
    await sh("sh", "-c", `dd if=/dev/zero of=${filler} bs=1M count=64 2>/dev/null || true`);
    const chunk = "x".repeat(200_000);
    let refused: Response | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await put(`big${i}`, chunk);
      if (res.status === 200) await res.body?.cancel();
      else refused = res;
    }
    assert.ok(refused, "storage never refused a write");
    assert.equal(refused.status, 503);
    const body = await refused.json() as { error: string };
    assert.equal(body.error, "storage unavailable: No space left on device");
    const headBefore =
      ((await (await fetch(obj, { headers: server.headers() })).json()) as { log_id: number })
        .log_id;

    // Reads, joins, chat REST 503 in JSON:API shape, and live relay (Spaces) go on.
    const state = await fetch(obj, { headers: server.headers() });
    assert.equal(state.status, 200);
    await state.body?.cancel();
    const chat = await fetch(`${server.baseUrl}/api/chat/threads`, {
      method: "POST",
      headers: { ...server.headers(), "content-type": "application/vnd.api+json" },
      body: JSON.stringify({ data: { type: "threads", attributes: { title: "t" } } }),
    });
    if (chat.status !== 201) {
      assert.equal(chat.status, 503);
      const errs = (await chat.json()) as { errors: { status: string; detail: string }[] };
      assert.equal(errs.errors[0].status, "503");
    } else await chat.body?.cancel();
    const other = await RawSocket.connect(server.wsUrl("key1"));
    try {
      assert.equal(
        (await other.join("durable:key1:doc:full", { app_secret: "secret1" })).status,
        "ok",
      );
      const space = "spaces:key1:full";
      const j = await sub.join(space, {});
      await other.join(space, {});
      assert.equal((await sub.push(space, j.joinRef, "ping", { n: 1 })).status, "ok");
      await other.waitFor((f) => f[2] === space && f[3] === "ping");
    } finally {
      await other.close();
    }
    const health = await fetch(`${server.baseUrl}/healthz`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
    // Readiness tells the truth: storage cannot take a write.
    const notReady = await fetch(`${server.baseUrl}/readyz`);
    assert.equal(notReady.status, 503);
    assert.match(((await notReady.json()) as { reason: string }).reason, /^storage unavailable: /);

    // Space returns: writes succeed and the log goes on without a gap.
    await Deno.remove(filler);
    const ready = await fetch(`${server.baseUrl}/readyz`);
    assert.deepEqual([ready.status, await ready.json()], [200, { status: "ready" }]);
    const after = await put("b", 2);
    assert.equal(after.status, 200);
    const { log_id } = await after.json() as { log_id: number };
    assert.equal(log_id, headBefore + 1);
    const live = await sub.waitFor((f) => f[3] === "change" && f[4].log_id === log_id);
    assert.equal(live[4].log_id, log_id);
    // Each refused commit is logged once, as refused; lmdb-js's own stray rejection of it is
    // not reported as an unhandled error.
    assert.match(server.output(), /storage refused a commit/);
    assert.doesNotMatch(server.output(), /unhandled rejection/);
    // No raw trace: lmdb-js's own print of the failed commit's error is not passed on.
    assert.doesNotMatch(server.output(), /lmdbError|code: 28|^error: /m);
    // LMDB's C library's own "Write error: …" text never runs into a log line.
    assert.doesNotMatch(server.output(), /Write error:[^\n]*storage refused a commit/);
  } finally {
    await sub.close();
    await server.stop();
    await sh("umount", "-l", mnt);
    await Deno.remove(mnt);
  }
});
