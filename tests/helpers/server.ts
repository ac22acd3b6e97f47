// Starts the real server as a child process on a random loopback port. With SWITCHBOARD_BIN
// set, the compiled binary is started instead of `deno run main.ts`, so the same end-to-end
// suite covers both.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp_dir.ts";
import {
  APPS,
  serverAddress,
  serverArgs,
  type StartOptions,
  type TestServer,
} from "./test_server.ts";

export { APPS } from "./test_server.ts";
export type { StartOptions, TestApp, TestServer } from "./test_server.ts";

const root = new URL("../../", import.meta.url).pathname;

/** The command that runs the server: the binary when SWITCHBOARD_BIN is set. */
export function serverCommand(): { cmd: string; args: string[] } {
  const bin = Deno.env.get("SWITCHBOARD_BIN");
  if (bin) return { cmd: bin, args: [] };
  return { cmd: Deno.execPath(), args: ["run", "-A", join(root, "main.ts")] };
}

/**
 * Starts a server that must refuse to start (an apps file or flags it rejects) with `apps` as
 * its apps file and `extra` flags; resolves with its exit code, its stderr and the apps file's
 * path. A server that starts anyway is killed after 30 s (the caller's assertions then fail).
 */
export async function startRefused(
  apps: unknown[],
  extra: string[] = [],
): Promise<{ code: number; stderr: string; file: string }> {
  const dir = tempDir("sb-refused-");
  const file = join(dir, "apps.json");
  writeFileSync(file, JSON.stringify({ apps }));
  const { cmd, args } = serverCommand();
  const child = new Deno.Command(cmd, {
    args: [...args, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]
      .concat(["--apps", file, ...extra]),
    cwd: Deno.env.get("SWITCHBOARD_BIN") ? dir : root,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const out = await child.output();
  clearTimeout(timer);
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr), file };
}

/** Starts a server and waits until it listens. */
export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const apps = opts.apps === undefined ? APPS : opts.apps;
  const dataDir = opts.dataDir ?? tempDir("sb-test-");
  // Text logs keep the start-up banner as a block the tests read; tests/e2e/logs_test.ts
  // covers the default JSON format.
  const args = serverArgs(apps, dataDir, ["--log-format", "text", ...(opts.args ?? [])]);
  const { cmd, args: pre } = serverCommand();
  const child = spawn(cmd, [...pre, ...args], {
    cwd: root,
    env: { ...Deno.env.toObject(), ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    // Killed when it does not listen in time: a test that fails here leaves no process behind.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start:\n${out}`));
    }, opts.startMs ?? 20_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  return {
    ...serverAddress(port, apps ?? []),
    dataDir,
    output: () => out,
    pid: child.pid!,
    stop: () => stopChild(child, exited, "SIGTERM"),
    kill: async () => {
      await stopChild(child, exited, "SIGKILL");
    },
  };
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<number | null>,
  signal: NodeJS.Signals,
) {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  const code = await exited;
  child.stdout?.destroy();
  child.stderr?.destroy();
  return code;
}
