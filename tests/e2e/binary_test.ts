// The release process surface: --help, --version, config errors, the development app, SIGTERM
// and online backup. Runs from source, or against the binary when SWITCHBOARD_BIN is set (then
// from a directory with no node_modules, as a user would).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serverCommand } from "../helpers/server.ts";
import { serverAddress, serverArgs } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { FLAGS } from "../../lib/config/config.ts";
import { VERSION } from "../../lib/version.ts";

const root = new URL("../../", import.meta.url).pathname;
const binary = Deno.env.get("SWITCHBOARD_BIN");

/** Runs the CLI to completion (20 s cap); the binary runs from an empty directory. */
function runCli(args: string[], env: Record<string, string> = {}) {
  const { cmd, args: pre } = serverCommand();
  const cwd = binary ? tempDir("sb-cwd-") : root;
  const child = spawn(cmd, [...pre, ...args], { cwd, env: { ...Deno.env.toObject(), ...env } });
  let stdout = "", stderr = "";
  child.stdout.on("data", (c) => (stdout += c));
  child.stderr.on("data", (c) => (stderr += c));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`timed out: ${args.join(" ")}\n${stdout}${stderr}`));
    }, 20_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts the server with Deno.Command (node:child_process under Deno reports a SIGTERMed
 * child as killed by the signal even when it exits 0, so exit codes are read this way).
 */
async function spawnServer(dataDir: string, ready = /app secret:\s+\S+\n/) {
  const { cmd, args: pre } = serverCommand();
  const cwd = binary ? tempDir("sb-cwd-") : root;
  const args = [...pre, ...serverArgs(null, dataDir, ["--log-format", "text"])];
  const child = new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).spawn();
  let output = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
  };
  const pumped = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const deadline = Date.now() + 20_000;
  // Every server in this file runs with the development app, printed last in the banner.
  while (!ready.test(output)) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const port = Number(output.match(/listening on http:\/\/[^:]+:(\d+)/)?.[1]);
  const { baseUrl, wsUrl } = serverAddress(port, []);
  return {
    baseUrl,
    wsUrl,
    output: () => output,
    /** SIGTERM; resolves with the exit code once the process and its output have ended. */
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already exited */ }
      const status = await child.status;
      await pumped;
      return status.code;
    },
  };
}

/** The dev app's printed credentials. */
function devApp(output: string) {
  const get = (label: string) => output.match(new RegExp(`app ${label}:\\s+(\\S+)`))?.[1];
  const app = { id: get("id")!, key: get("key")!, secret: get("secret")! };
  assert.ok(app.id && app.key && app.secret, `no development app in output:\n${output}`);
  return app;
}

Deno.test("--help lists every flag with its environment variable and default", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split("\n");
  for (const f of FLAGS) {
    const line = lines.find((l) => l.trimStart().startsWith(f.flag + " ") || l.trim() === f.flag);
    assert.ok(line, `--help has no line for ${f.flag}`);
    assert.ok(line.includes(f.env), `${f.flag} line lacks ${f.env}: ${line}`);
    assert.ok(
      line.includes(`default ${f.default ?? "none"}`),
      `${f.flag} line lacks its default: ${line}`,
    );
  }
  assert.match(r.stdout, /backup <path>/);
});

Deno.test("--version prints the release version", async () => {
  const r = await runCli(["--version"]);
  assert.equal(r.code, 0);
  assert.equal(r.stdout.trim(), `switchboard ${VERSION}`);
});

Deno.test("invalid configuration exits 2 with one line naming the problem", async () => {
  const dir = tempDir("sb-bad-");
  const app = { id: "a", key: "k", secret: "s" };
  const cases: [string, string | null, RegExp, string[]?][] = [
    ["bad JSON", "{ apps: [", /not valid JSON/],
    [
      "duplicate keys",
      JSON.stringify({ apps: [app, { ...app, id: "b" }] }),
      /apps\[1\] \(id "b"\): key "k" is also the key of apps\[0\] \(id "a"\); keys must be unique/,
    ],
    ["missing secret", JSON.stringify({ apps: [{ id: "a", key: "k" }] }), /missing "secret"/],
    [
      "unknown setting",
      JSON.stringify({ apps: [{ ...app, colour: "red" }] }),
      /unknown setting "colour"/,
    ],
    [
      "a Soketi setting without an equivalent",
      JSON.stringify({ apps: [{ ...app, maxReadRequestsPerSecond: 100 }] }),
      /apps\[0\] has unknown setting "maxReadRequestsPerSecond" \(a setting of other Pusher servers that Switchboard does not support: Soketi's read-request rate limit/,
    ],
    [
      "a webhook header replacing the signature",
      JSON.stringify({
        apps: [{
          ...app,
          webhooks: [{
            url: "http://127.0.0.1:9/h",
            event_types: ["client_event"],
            headers: { "X-Pusher-Signature": "forged" },
          }],
        }],
      }),
      /webhooks\[0\]\.headers: "X-Pusher-Signature" cannot be set/,
    ],
    ["unknown flag", null, /unknown flag --bogus/, ["--bogus"]],
    ["bad port", null, /--port must be an integer/, ["--port", "http"]],
  ];
  for (const [name, content, expected, extra] of cases) {
    const args = ["--data-dir", join(dir, "data"), "--port", "0", ...(extra ?? [])];
    if (content !== null) {
      const file = join(dir, `${name.replace(/ /g, "_")}.json`);
      writeFileSync(file, content);
      args.push("--apps", file);
    }
    const r = await runCli(args);
    assert.equal(r.code, 2, `${name}: exit code ${r.code}\n${r.stdout}${r.stderr}`);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, `${name}: expected one line, got:\n${r.stderr}`);
    assert.match(lines[0], /^switchboard: /);
    assert.match(lines[0], expected, name);
  }
});

Deno.test("the development app is created on first start and reused on the next", async () => {
  const dataDir = tempDir("sb-dev-");
  const first = await spawnServer(dataDir);
  const app = devApp(first.output());
  assert.match(first.output(), /development app \(created/);
  assert.equal(await first.stop(), 0);
  const second = await spawnServer(dataDir);
  assert.match(second.output(), /development app \(reused/);
  assert.deepEqual(devApp(second.output()), app);
  assert.equal(await second.stop(), 0);
});

Deno.test("SIGTERM stops a server with an open socket and exits 0", async () => {
  const server = await spawnServer(tempDir("sb-term-"));
  const ws = new WebSocket(server.wsUrl(devApp(server.output()).key));
  await new Promise((resolve, reject) => {
    ws.onmessage = resolve;
    ws.onerror = reject;
  });
  const closed = new Promise((resolve) => (ws.onclose = resolve));
  assert.equal(await server.stop(), 0);
  await closed;
  assert.match(server.output(), /SIGTERM: shutting down/);
});

Deno.test("SIGTERM during start-up waits for the start, then shuts down and exits 0", async () => {
  // The "starting" line is logged before the store opens, so the signal lands mid start-up.
  const server = await spawnServer(tempDir("sb-early-"), /starting/);
  assert.equal(await server.stop(), 0, server.output());
  assert.match(server.output(), /SIGTERM: shutting down/);
  assert.match(server.output(), /stopped/);
});

Deno.test("backup of a running server is a copy a new server starts on", async () => {
  const server = await spawnServer(tempDir("sb-live-"));
  const dataDir = server.output().match(/kept in (.+)\):/)![1];
  const app = devApp(server.output());
  const headers = {
    "x-app-key": app.key,
    "x-app-secret": app.secret,
    "content-type": "application/json",
  };
  const objectUrl = (base: string) => `${base}/api/v1/objects/${app.id}/note/backup`;
  const backupFile = join(tempDir("sb-backup-"), "copy.mdb");
  try {
    const put = await fetch(`${objectUrl(server.baseUrl)}/text`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ value: "kept" }),
    });
    await put.body?.cancel();
    assert.equal(put.status, 200);
    const r = await runCli(["backup", backupFile, "--data-dir", dataDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /backup written to/);
    const again = await runCli(["backup", backupFile, "--data-dir", dataDir]);
    assert.equal(again.code, 2, "an existing destination is refused");
  } finally {
    assert.equal(await server.stop(), 0);
  }
  const restored = tempDir("sb-restored-");
  copyFileSync(backupFile, join(restored, "switchboard.mdb"));
  const copy = await spawnServer(restored);
  try {
    assert.match(copy.output(), /development app \(reused/);
    assert.deepEqual(devApp(copy.output()), app);
    const res = await fetch(objectUrl(copy.baseUrl), { headers });
    assert.equal(res.status, 200);
    assert.deepEqual(
      (await res.json()).state,
      { text: "kept" },
      "the object written before the backup",
    );
  } finally {
    assert.equal(await copy.stop(), 0);
  }
});
