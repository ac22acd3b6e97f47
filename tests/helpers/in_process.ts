// Starts the real server inside the test process: the same `startSwitchboard` main.ts calls (the
// apps file, real LMDB in a temp dir, every product, the Hono app, the socket server), listening
// on a random loopback port so official clients (pusher-js, phoenix, the SDK) connect as usual,
// but with no child process: no `deno run main.ts` per test, so a product test starts in
// milliseconds. Tests about the process itself (signals, exit codes, start-up output, the
// binary, the cluster) use tests/helpers/server.ts instead; tests/architecture/
// server_processes_test.ts bounds how many do.
//
// The binary is the product: with SWITCHBOARD_BIN set (CI's second run of the suite), the same
// tests start the binary instead, through tests/helpers/server.ts, so every end-to-end test,
// the property tests with arbitrary Unicode names among them, also runs against it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../lib/config/config.ts";
import { configureLog } from "../../lib/log/mod.ts";
import type { App } from "../../lib/config/apps.ts";
import { startSwitchboard, type Switchboard } from "../../lib/server.ts";
import { type StartOptions, startServer, type TestApp, type TestServer } from "./server.ts";
import { DEV_APP_FILE, type DevAppFile } from "../../lib/config/dev_app_file.ts";
import { APP_DEFAULTS } from "../../lib/config/apps.ts";
import { removeAtExit, tempDir } from "./temp_dir.ts";

export type { StartOptions, TestApp, TestServer } from "./server.ts";

/** The default app set (as tests/helpers/server.ts's): an open app and one with user
 * authentication on. */
export const APPS: TestApp[] = [
  { id: "app-1", key: "key1", secret: "secret1" },
  { id: "app-2", key: "key2", secret: "secret2", enable_user_authentication: 1 },
];

/** Log lines of the running in-process servers (the log is process-wide: each server keeps the
 * lines written while it runs). */
const outputs = new Set<string[]>();
let logConfigured = false;

/** Routes the process-wide log into the running servers' buffers (text lines, as
 * tests/helpers/server.ts starts its servers). */
function captureLog(level: string): void {
  if (logConfigured) return;
  logConfigured = true;
  configureLog(level as "info", "text", (line) => {
    for (const out of outputs) out.push(line);
  });
}

/** A server started in this process: a `TestServer`, plus the development app it created or
 * reused when started without an apps file (a process prints it in its banner instead). */
export interface InProcessServer extends TestServer {
  devApp?: App;
}

/** Starts the server in this process and waits until it listens. `opts.env` is read as the
 * server's environment (only its `SWITCHBOARD_*`-style settings matter). */
export async function startInProcess(opts: StartOptions = {}): Promise<InProcessServer> {
  if (Deno.env.get("SWITCHBOARD_BIN")) return await startBinary(opts);
  const apps = opts.apps === undefined ? APPS : opts.apps;
  const dataDir = opts.dataDir ?? tempDir("sb-inproc-");
  const args = ["--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, ...(opts.args ?? [])];
  if (apps) {
    const file = removeAtExit(join(dataDir, "..", `apps-${crypto.randomUUID()}.json`));
    writeFileSync(file, JSON.stringify({ apps }));
    args.push("--apps", file);
  }
  const config = parseConfig(args, { ...opts.env });
  captureLog(config.logLevel);
  const out: string[] = [];
  outputs.add(out);
  let sb: Switchboard;
  try {
    sb = await startSwitchboard(config);
  } catch (err) {
    outputs.delete(out);
    throw err;
  }
  const port = sb.server.port;
  const firstApp = apps?.[0];
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= sb.shutdown().finally(() => {
      outputs.delete(out);
    });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    apps: apps ?? [],
    devApp: sb.devApp,
    wsUrl: (appKey = firstApp?.key ?? "", extra = "") =>
      `ws://127.0.0.1:${port}/socket/websocket?app_key=${
        encodeURIComponent(appKey)
      }&vsn=2.0.0${extra}`,
    headers: (app = firstApp!) => ({
      "x-app-key": app.key,
      "x-app-secret": app.secret,
      "content-type": "application/json",
    }),
    output: () => out.join("\n"),
    pid: Deno.pid,
    stop: async () => {
      await stop();
      return 0;
    },
    kill: () => stop(),
  };
}

/** The binary started as tests/helpers/server.ts starts it, with the development app it wrote to
 * its data dir when started without an apps file. */
async function startBinary(opts: StartOptions): Promise<InProcessServer> {
  const server = await startServer(opts);
  if (opts.apps !== null) return server;
  const file: DevAppFile = JSON.parse(readFileSync(join(server.dataDir, DEV_APP_FILE), "utf8"));
  const devApp = { ...APP_DEFAULTS, id: file.app_id, key: file.app_key, secret: file.app_secret };
  return { ...server, devApp };
}

/** Runs `fn` against a fresh in-process server and always stops it afterwards. */
export async function withInProcess(
  fn: (server: InProcessServer) => Promise<void>,
  opts: StartOptions = {},
): Promise<void> {
  const server = await startInProcess(opts);
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
}
