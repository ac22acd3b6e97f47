/**
 * `<data-dir>/development-app.json`: the development app's credentials and this server's
 * address, rewritten at every start without an apps file, so local tools (examples/ai-chat's
 * serve.ts) can use the development app without anyone pasting its secret. The secret is
 * already stored in the same directory (in LMDB); the file is readable by its owner only.
 */
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { App } from "./apps.ts";

/** The file's name inside the data dir. */
export const DEV_APP_FILE = "development-app.json";

/** What the file holds. */
export interface DevAppFile {
  app_id: string;
  app_key: string;
  app_secret: string;
  /** `http://HOST:PORT` of the server that wrote it (loopback when it listens on all). */
  url: string;
  /** The WebSocket endpoint for the SDKs: `ws://HOST:PORT/socket`. */
  socket: string;
}

/** Writes the file (mode 0600); `host` and `port` are where the server listens. */
export function writeDevAppFile(dataDir: string, app: App, host: string, port: number): string {
  const shown = ["0.0.0.0", "::", "", "[::]"].includes(host)
    ? "localhost"
    : host.includes(":")
    ? `[${host}]`
    : host;
  const url = `http://${shown}:${port}`;
  const body: DevAppFile = {
    app_id: app.id,
    app_key: app.key,
    app_secret: app.secret,
    url,
    socket: `ws://${shown}:${port}/socket`,
  };
  const path = join(dataDir, DEV_APP_FILE);
  writeFileSync(path, JSON.stringify(body, null, 2) + "\n", { mode: 0o600 });
  chmodSync(path, 0o600); // an older file keeps its mode on rewrite
  return path;
}
