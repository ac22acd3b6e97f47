// Entry point: parse configuration, start the server, stop gracefully. No logic of its own.
import process from "node:process";
import { ConfigError, helpText, parseConfig } from "./lib/config/config.ts";
import { startSwitchboard } from "./lib/server.ts";
import { runBackup } from "./lib/store/backup.ts";
import { DataDirLockedError } from "./lib/store/lock.ts";
import { VERSION } from "./lib/version.ts";

async function main() {
  const config = parseConfig(process.argv.slice(2), process.env);
  if (config.command === "help") return console.log(helpText(VERSION));
  if (config.command === "version") return console.log(`switchboard ${VERSION}`);
  if (config.command === "backup") {
    await runBackup(config.dataDir, config.backupPath!);
    return console.log(`backup written to ${config.backupPath}`);
  }
  // Last resort: a stray rejected promise is logged, never a reason to drop every connection.
  process.on("unhandledRejection", (err) => console.error("switchboard: unhandled rejection:", err));
  let sb;
  try {
    sb = await startSwitchboard(config);
  } catch (err) {
    if (isAddressInUse(err)) {
      throw new ConfigError(`${config.host}:${config.port} is already in use (--port / PORT)`);
    }
    if (err instanceof DataDirLockedError) throw new ConfigError(err.message);
    throw err;
  }
  const shown = sb.server.hostname === "0.0.0.0" ? "localhost" : sb.server.hostname;
  // One write, so a reader waiting for "listening" gets the whole banner with it.
  const banner = [
    `switchboard ${VERSION} listening on http://${shown}:${sb.server.port}`,
    `  websocket: ws://${shown}:${sb.server.port}/socket/websocket?app_key=APP_KEY&vsn=2.0.0`,
    `  metrics:   http://${shown}:${sb.metricsPort ?? sb.server.port}/metrics`,
  ];
  if (sb.devApp) {
    const app = sb.devApp;
    banner.push(
      `  development app (${sb.devAppCreated ? "created" : "reused"}, kept in ${config.dataDir}):`,
      `    app id:     ${app.id}`,
      `    app key:    ${app.key}`,
      `    app secret: ${app.secret}`,
    );
  }
  console.log(banner.join("\n"));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    try {
      await sb.shutdown();
    } catch (err) {
      console.error("switchboard: shutdown failed:", err);
      process.exit(1);
    }
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

/** Whether `err` is the runtime's "address already in use" (Deno: AddrInUse, Bun: EADDRINUSE). */
function isAddressInUse(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string };
  return e?.name === "AddrInUse" || e?.code === "EADDRINUSE" || /address already in use/i.test(e?.message ?? "");
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`switchboard: ${err.message}`);
    process.exit(2);
  }
  console.error("switchboard: failed to start:", err);
  process.exit(1);
});
