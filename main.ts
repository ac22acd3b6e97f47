// Entry point: parse configuration, start the server, stop gracefully. No logic of its own.
import process from "node:process";
import { ConfigError, helpText, parseConfig } from "./lib/config/config.ts";
import { startSwitchboard } from "./lib/server.ts";
import { runBackup } from "./lib/store/backup.ts";
import { isCommitFailure } from "./lib/store/errors.ts";
import { DataDirLockedError } from "./lib/store/lock.ts";
import { VERSION } from "./lib/version.ts";
import type { App } from "./lib/config/apps.ts";
import { configureLog, errorFields, log, type LogLevel, resolveLogFormat } from "./lib/log/mod.ts";
import { writeDevAppFile } from "./lib/config/dev_app_file.ts";

async function main() {
  const config = parseConfig(process.argv.slice(2), process.env);
  if (config.command === "help") return console.log(helpText(VERSION));
  if (config.command === "version") return console.log(`switchboard ${VERSION}`);
  if (config.command === "backup") {
    await runBackup(config.dataDir, config.backupPath!);
    return console.log(`backup written to ${config.backupPath}`);
  }
  if (config.command === "cluster-status") {
    const { clusterStatus } = await import("./lib/cluster/divergence/refound.ts");
    return console.log(await clusterStatus([config.dataDir, ...config.otherDataDirs!]));
  }
  if (config.command === "cluster-refound") {
    const { refound } = await import("./lib/cluster/divergence/refound.ts");
    const nats = config.nats!.split(",").map((u) => u.trim()).filter(Boolean);
    try {
      return console.log(
        await refound({ dataDir: config.dataDir, nats, others: config.otherDataDirs! }),
      );
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      console.error(
        `switchboard: cluster refound failed: ${
          String(err)
        }; run it again with every node still stopped (each run does the whole)`,
      );
      process.exit(1);
    }
  }
  const logFormat = resolveLogFormat(config.logFormat);
  configureLog(
    config.logLevel as LogLevel,
    logFormat,
    undefined,
    config.nats ? { node: config.nodeId } : undefined,
  );
  // Last resort: a stray rejected promise is logged, never a reason to drop every connection
  // (a failed commit's stray rejection is not: the store has reported that commit).
  process.on("unhandledRejection", (err) => {
    if (!isCommitFailure(err)) log.error("unhandled rejection", errorFields(err));
  });
  const started = Promise.withResolvers<Awaited<ReturnType<typeof startSwitchboard>> | null>();
  // Signals are handled from before start-up, so one that arrives while the store opens or the
  // banner is written still shuts down gracefully (the default action would exit 143 and skip
  // the close): it waits for start-up, then stops as usual.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const sb = await started.promise;
    if (!sb) return; // start-up failed: main() reports it and exits
    log.info(`${signal}: shutting down`);
    try {
      await sb.shutdown();
    } catch (err) {
      log.error("shutdown failed", errorFields(err));
      process.exit(1);
    }
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  log.info("starting", {
    version: VERSION,
    host: config.host,
    port: config.port,
    data_dir: config.dataDir,
    apps_file: config.appsFile ?? null,
    history_max_count: config.historyMaxCount,
    history_max_age: config.historyMaxAgeSeconds,
    idle_timeout: config.idleTimeoutSeconds,
    metrics_port: config.metricsPort ?? null,
    playground: config.playground,
  });
  let sb;
  try {
    sb = await startSwitchboard(config);
  } catch (err) {
    started.resolve(null);
    if (isAddressInUse(err)) {
      throw new ConfigError(`${config.host}:${config.port} is already in use (--port / PORT)`);
    }
    if (err instanceof DataDirLockedError) throw new ConfigError(err.message);
    throw err;
  }
  started.resolve(sb);
  if (sb.devApp) {
    // Local tools read the development app from the data dir (docs/operations.md).
    try {
      writeDevAppFile(config.dataDir, sb.devApp, sb.server.hostname, sb.server.port);
    } catch (err) {
      log.warn("could not write the development app file", errorFields(err));
    }
  }
  const shown = sb.server.hostname === "0.0.0.0" ? "localhost" : sb.server.hostname;
  const listening = `switchboard ${VERSION} listening on http://${shown}:${sb.server.port}`;
  const websocket = `ws://${shown}:${sb.server.port}/socket/websocket?app_key=APP_KEY&vsn=2.0.0`;
  const metrics = `http://${shown}:${sb.metricsPort ?? sb.server.port}/metrics`;
  if (logFormat === "json") {
    if (sb.devApp) {
      // The development app's credentials are printed by design (docs/operations.md "Start-up
      // output"), before the listening line so a reader waiting for that line has them.
      log.announce(
        `development app (${sb.devAppCreated ? "created" : "reused"}, kept in ${config.dataDir})`,
        {
          app_id: sb.devApp.id,
          app_key: sb.devApp.key,
          development_app_secret: sb.devApp.secret,
        },
      );
    }
    log.announce(listening, { websocket, metrics });
  } else {
    // For people (`--log-format text`): the banner as a block, in one write.
    const dev = sb.devApp
      ? { app: sb.devApp, created: sb.devAppCreated, dataDir: config.dataDir }
      : undefined;
    console.log(textBanner(listening, websocket, metrics, dev));
  }
}

/** The start-up banner of `--log-format text`, with the development app when there is one. */
function textBanner(
  listening: string,
  websocket: string,
  metrics: string,
  dev?: { app: App; created: boolean; dataDir: string },
): string {
  const lines = [listening, `  websocket: ${websocket}`, `  metrics:   ${metrics}`];
  if (dev) {
    lines.push(
      `  development app (${dev.created ? "created" : "reused"}, kept in ${dev.dataDir}):`,
      `    app id:     ${dev.app.id}`,
      `    app key:    ${dev.app.key}`,
      `    app secret: ${dev.app.secret}`,
    );
  }
  return lines.join("\n");
}

/** Whether `err` is the runtime's "address already in use" (Deno: AddrInUse, Bun: EADDRINUSE). */
function isAddressInUse(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string };
  return e?.name === "AddrInUse" || e?.code === "EADDRINUSE" ||
    /address already in use/i.test(e?.message ?? "");
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`switchboard: ${err.message}`);
    process.exit(2);
  }
  console.error("switchboard: failed to start:", err);
  process.exit(1);
});
