// What every test server shares, whether tests/helpers/server.ts starts it as a child process
// or tests/helpers/in_process.ts inside the test process: the apps, the start flags, and the
// addresses and credentials a test reaches it with. Starts nothing itself.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeAtExit } from "./temp_dir.ts";

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

/** Options for starting a test server. */
export interface StartOptions {
  apps?: TestApp[] | null;
  dataDir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** How long it may take to listen (default 20 s); killed past it. */
  startMs?: number;
}

/**
 * The flags of a test server on a random loopback port over `dataDir`: `extra`, then
 * `--apps` with a file written from `apps` next to the data dir (none when `apps` is null).
 */
export function serverArgs(apps: TestApp[] | null, dataDir: string, extra: string[]): string[] {
  const args = ["--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, ...extra];
  if (apps) {
    const file = removeAtExit(join(dataDir, "..", `apps-${crypto.randomUUID()}.json`));
    writeFileSync(file, JSON.stringify({ apps }));
    args.push("--apps", file);
  }
  return args;
}

/** The addresses and credential headers of a server listening on `port` with `apps` (the
 * first app is the default one). */
export function serverAddress(
  port: number,
  apps: TestApp[],
): Pick<TestServer, "baseUrl" | "port" | "apps" | "wsUrl" | "headers"> {
  const firstApp = apps[0];
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    apps,
    wsUrl: (appKey = firstApp?.key ?? "", extra = "") =>
      `ws://127.0.0.1:${port}/socket/websocket?app_key=${
        encodeURIComponent(appKey)
      }&vsn=2.0.0${extra}`,
    headers: (app = firstApp) => ({
      "x-app-key": app.key,
      "x-app-secret": app.secret,
      "content-type": "application/json",
    }),
  };
}
