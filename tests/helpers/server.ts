// Starts the real server as a child process on a random loopback port. With SWITCHBOARD_BIN
// set, the compiled binary is started instead of `deno run main.ts`, so the same end-to-end
// suite covers both.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeAtExit, tempDir } from "./temp_dir.ts";

/** An app as written to the test apps file. */
export interface TestApp {
  id: string;
  key: string;
  secret: string;
  enable_user_authentication?: 0 | 1;
  enable_client_messages?: boolean;
  max_client_events_per_sec?: number;
  max_backend_events_per_sec?: number;
  max_connections?: number;
  allowed_origins?: string[];
  webhooks?: { url: string; event_types: string[]; [setting: string]: unknown }[];
  /** Any other setting of the apps file (per-app limits, other servers' keys). */
  [setting: string]: unknown;
}

/** The default app set: an open app and one with user authentication on. */
export const APPS: TestApp[] = [
  { id: "app-1", key: "key1", secret: "secret1" },
  { id: "app-2", key: "key2", secret: "secret2", enable_user_authentication: 1 },
];

/** A started server. */
export interface TestServer {
  baseUrl: string;
  port: number;
  dataDir: string;
  apps: TestApp[];
  /** Socket URL for an app key: `ws://127.0.0.1:PORT/socket/websocket?app_key=...&vsn=2.0.0`. */
  wsUrl(appKey?: string, extra?: string): string;
  /** Credential headers for an app. */
  headers(app?: TestApp): Record<string, string>;
  output(): string;
  /** SIGTERM and wait for exit; resolves with the exit code (null under Deno when the
   * child ended by the signal: use Deno.Command where the exit code matters). */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** The server's process id (fault tests freeze it with SIGSTOP). */
  pid: number;
}

/** Options for `startServer`. */
export interface StartOptions {
  apps?: TestApp[] | null;
  dataDir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** How long it may take to listen (default 20 s); killed past it. */
  startMs?: number;
}

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
  const args = [
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    dataDir,
    "--log-format",
    "text",
    ...(opts.args ?? []),
  ];
  if (apps) {
    const file = removeAtExit(join(dataDir, "..", `apps-${crypto.randomUUID()}.json`));
    writeFileSync(file, JSON.stringify({ apps }));
    args.push("--apps", file);
  }
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
  const firstApp = apps?.[0];
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    apps: apps ?? [],
    wsUrl: (appKey = firstApp?.key ?? "", extra = "") =>
      `ws://127.0.0.1:${port}/socket/websocket?app_key=${
        encodeURIComponent(appKey)
      }&vsn=2.0.0${extra}`,
    headers: (app = firstApp!) => ({
      "x-app-key": app.key,
      "x-app-secret": app.secret,
      "content-type": "application/json",
    }),
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

/** Runs `fn` against a fresh server and always stops it afterwards. */
export async function withServer(
  fn: (server: TestServer) => Promise<void>,
  opts: StartOptions = {},
): Promise<void> {
  const server = await startServer(opts);
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
}
