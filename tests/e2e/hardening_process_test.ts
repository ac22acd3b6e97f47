// Issue 12 item 6: SIGTERM drains (exit 0, every acknowledged write kept) even under load, a
// port already in use is one line, and `deno task start` passes signals to the server.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { createServer } from "node:net";
import { APPS, serverCommand } from "../helpers/server.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { removeAtExit, tempDir } from "../helpers/temp_dir.ts";

interface Proc {
  baseUrl: string;
  headers: Record<string, string>;
  /** SIGTERM, then the real exit code (Deno.Command reports it; node:child_process does not). */
  stop(): Promise<number>;
  /** What the server wrote to stderr (complete once `stop` resolved). */
  stderr(): string;
}

/** Starts the server (or the binary) with Deno.Command, so its exit code can be asserted. */
async function spawnServer(dataDir: string): Promise<Proc> {
  const apps = removeAtExit(`${dataDir}.apps.json`);
  await Deno.writeTextFile(apps, JSON.stringify({ apps: APPS }));
  const { cmd, args } = serverCommand();
  const child = new Deno.Command(cmd, {
    args: [...args, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, "--apps", apps],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (err += chunk) }),
  );
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  let port = 0;
  while (!port) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited before listening:\n${out}`);
    out += value;
    port = Number(out.match(/listening on http:\/\/[^:]+:(\d+)/)?.[1] ?? 0);
  }
  const drain = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    headers: { "x-app-key": "key1", "x-app-secret": "secret1", "content-type": "application/json" },
    stop: async () => {
      child.kill("SIGTERM");
      const status = await child.status;
      await drain;
      await errDone;
      return status.code;
    },
    stderr: () => err,
  };
}

/** Increments one object from `writers` loops until the server stops answering. */
function storm(server: Proc, writers: number): { acked: number[]; done: Promise<void> } {
  const acked: number[] = [];
  const url = `${server.baseUrl}/api/v1/objects/app-1/counter/drain/increment`;
  // Besides the counted increments, other writers keep channels and threads busy.
  const side = [
    [`${server.baseUrl}/api/apps/app-1/trigger`, () => ({ channel: "drain", event: "e", data: 1 })],
    [`${server.baseUrl}/api/chat/threads`, () => ({
      data: { type: "threads", id: crypto.randomUUID(), attributes: {} },
    })],
  ] as const;
  const loops = Array.from({ length: writers }, async (_, w) => {
    for (let i = 0; i < 2000; i++) {
      try {
        if (w % 4 === 3) {
          const [to, body] = side[i % 2];
          const r = await fetch(to, {
            method: "POST",
            headers: server.headers,
            body: JSON.stringify(body()),
          });
          await r.body?.cancel();
          continue;
        }
        const res = await fetch(url, {
          method: "POST",
          headers: server.headers,
          body: JSON.stringify({ slot: "n" }),
        });
        if (res.status !== 200) {
          await res.body?.cancel();
          if (res.status === 503) continue; // shutting down: refused, nothing applied
          throw new Error(`unexpected ${res.status}`);
        }
        acked.push(((await res.json()) as { log_id: number }).log_id);
      } catch (err) {
        if (err instanceof TypeError) return; // connection refused or reset: server gone
        throw err;
      }
    }
  });
  // Live chat senders: pushes in flight over WebSockets while the server stops.
  const wsUrl = server.baseUrl.replace("http", "ws") + "/socket/websocket?app_key=key1&vsn=2.0.0";
  const chatters = Array.from({ length: 4 }, async (_, c) => {
    let sock: RawSocket | undefined;
    try {
      sock = await RawSocket.connect(wsUrl);
      const topic = `chat:key1:drain-${c}`;
      const joined = await sock.join(topic, { client_id: `c${c}` });
      for (let i = 0; i < 500 && !sock.closeEvent; i++) {
        sock.send(joined.joinRef, topic, "send", { content: "hi", parentId: null });
        await new Promise((r) => setTimeout(r, 2));
      }
    } catch {
      /* the server went away mid-join */
    } finally {
      await sock?.close().catch(() => {});
    }
  });
  return { acked, done: Promise.all([...loops, ...chatters]).then(() => {}) };
}

Deno.test("process: SIGTERM under a write storm exits 0 and keeps every acknowledged write (5 rounds)", async () => {
  const dataDir = tempDir("sb-proc-");
  let total = 0;
  for (let round = 0; round < 5; round++) {
    const server = await spawnServer(dataDir);
    const { acked, done } = storm(server, 16);
    try {
      while (acked.length < 50) await new Promise((r) => setTimeout(r, 5));
    } finally {
      const code = await server.stop();
      await done;
      assert.equal(code, 0, `round ${round}: exit code ${code}`);
      // Nothing may touch storage after it closed, and no handler may crash on the way out.
      assert.doesNotMatch(
        server.stderr(),
        /closed database|read transaction|crashed|unhandled|error/i,
      );
    }
    total += acked.length;
    const again = await spawnServer(dataDir);
    try {
      const res = await fetch(`${again.baseUrl}/api/v1/objects/app-1/counter/drain/log`, {
        headers: again.headers,
      });
      const ids = ((await res.json()) as { items: { log_id: number }[] }).items.map((i) =>
        i.log_id
      );
      assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => i + 1), "gap-free log");
      const have = new Set(ids);
      assert.ok(
        acked.every((id) => have.has(id)),
        `round ${round}: an acknowledged write is missing`,
      );
    } finally {
      await again.stop();
    }
  }
  assert.ok(total >= 250);
});

Deno.test("process: a port already in use is refused with one line and exit code 2", async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const { cmd, args } = serverCommand();
    const out = await new Deno.Command(cmd, {
      args: [
        ...args,
        "--port",
        String(port),
        "--host",
        "127.0.0.1",
        "--data-dir",
        tempDir("sb-proc-"),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 2);
    assert.equal(stderr, `switchboard: 127.0.0.1:${port} is already in use (--port / PORT)`);
  } finally {
    blocker.close();
  }
});

Deno.test("process: `deno task start` passes SIGTERM on to the server", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  const task = spawn(Deno.execPath(), [
    "task",
    "start",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    tempDir("sb-proc-"),
  ], { cwd: root, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  task.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  task.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  const exited = new Promise<number | null>((resolve) => task.on("exit", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 30_000;
    while (!/listening on http:\/\/[^:]+:(\d+)/.test(out)) {
      if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const port = Number(out.match(/listening on http:\/\/[^:]+:(\d+)/)![1]);
    task.kill("SIGTERM");
    await exited;
    // The server itself must be gone: its port refuses connections.
    const deadline2 = Date.now() + 10_000;
    let refused = false;
    while (!refused && Date.now() < deadline2) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 50));
      } catch {
        refused = true;
      }
    }
    assert.ok(refused, `the server still answers after SIGTERM to the task:\n${out}`);
    assert.match(out, /SIGTERM: shutting down/);
  } finally {
    // The task runs in its own process group: take down whatever of it is left, even when the
    // signal was not passed on.
    try {
      process.kill(-task.pid!, "SIGKILL");
    } catch { /* already gone */ }
    task.stdout?.destroy();
    task.stderr?.destroy();
  }
});
