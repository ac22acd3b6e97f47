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
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../lib/config/config.ts";
import { configureLog } from "../../lib/log/mod.ts";
import type { App } from "../../lib/config/apps.ts";
import { startSwitchboard, type Switchboard } from "../../lib/server.ts";
import { startServer } from "./server.ts";
import {
  APPS,
  serverAddress,
  serverArgs,
  type StartOptions,
  type TestServer,
} from "./test_server.ts";
import { DEV_APP_FILE, type DevAppFile } from "../../lib/config/dev_app_file.ts";
import { APP_DEFAULTS } from "../../lib/config/apps.ts";
import { tempDir } from "./temp_dir.ts";

export { APPS } from "./test_server.ts";
export type { StartOptions, TestApp, TestServer } from "./test_server.ts";

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
  const config = parseConfig(serverArgs(apps, dataDir, opts.args ?? []), { ...opts.env });
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
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= sb.shutdown().finally(() => {
      outputs.delete(out);
    });
  return {
    ...serverAddress(sb.server.port, apps ?? []),
    dataDir,
    devApp: sb.devApp,
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
