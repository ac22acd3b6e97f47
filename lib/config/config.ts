// The process configuration: every flag with its environment variable and default, `--help`,
// and parsing argv + environment into a `Config` (ConfigError on a bad value).
import { hostname } from "node:os";

/** A configuration problem: start-up stops with this one line and exit code 2. */
export class ConfigError extends Error {}

/** Everything the process reads from flags and environment. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  appsFile?: string;
  /** PubSub history kept per channel: at most this many events ... */
  historyMaxCount: number;
  /** ... and none older than this many seconds. */
  historyMaxAgeSeconds: number;
  playground: boolean;
  /** Least severe level logged: debug, info, warn, error, silent. */
  logLevel: string;
  /** `json` (one object per line), `text`, or `auto` (text when stdout is a terminal, else json). */
  logFormat: string;
  /** Serves `/metrics` on its own listener (same host) instead of the main port. */
  metricsPort?: number;
  /** Seconds of silence after which a socket is closed. */
  idleTimeoutSeconds: number;
  /** NATS server URLs (comma-separated): clustered mode on JetStream when set. */
  nats?: string;
  /** This node's name in logs, metrics and the cluster (unique per node). */
  nodeId: string;
  /** The operators' console's admin secret: the console at `/console/` is on when set. */
  consoleSecret?: string;
  command: "serve" | "help" | "version" | "backup" | "cluster-status" | "cluster-refound";
  /** Destination of `backup`. */
  backupPath?: string;
  /** `cluster status` / `cluster refound`: other nodes' data dirs (copies) to compare with. */
  otherDataDirs?: string[];
}

interface FlagSpec {
  flag: string;
  env: string;
  key: keyof Config;
  kind: "string" | "port" | "count" | "bool";
  default: unknown;
  help: string;
}

/** Every flag, its environment variable and default (printed by `--help`). */
export const FLAGS: FlagSpec[] = [
  {
    flag: "--port",
    env: "PORT",
    key: "port",
    kind: "port",
    default: 4000,
    help: "HTTP and WebSocket port",
  },
  {
    flag: "--host",
    env: "HOST",
    key: "host",
    kind: "string",
    default: "0.0.0.0",
    help: "listen address",
  },
  {
    flag: "--data-dir",
    env: "DATA_DIR",
    key: "dataDir",
    kind: "string",
    default: "./data",
    help: "directory of the LMDB environment",
  },
  {
    flag: "--apps",
    env: "APPS_FILE",
    key: "appsFile",
    kind: "string",
    default: undefined,
    help: "apps JSON file (default: a development app kept in the data dir)",
  },
  {
    flag: "--history-max-count",
    env: "HISTORY_MAX_COUNT",
    key: "historyMaxCount",
    kind: "count",
    default: 1000,
    help: "channel events kept per channel for replay",
  },
  {
    flag: "--history-max-age",
    env: "HISTORY_MAX_AGE",
    key: "historyMaxAgeSeconds",
    kind: "count",
    default: 86400,
    help: "seconds a channel event is kept for replay",
  },
  {
    flag: "--idle-timeout",
    env: "IDLE_TIMEOUT",
    key: "idleTimeoutSeconds",
    kind: "count",
    default: 60,
    help: "seconds of silence before a socket is closed",
  },
  {
    flag: "--log-level",
    env: "LOG_LEVEL",
    key: "logLevel",
    kind: "string",
    default: "info",
    help: "debug, info, warn, error or silent",
  },
  {
    flag: "--log-format",
    env: "LOG_FORMAT",
    key: "logFormat",
    kind: "string",
    default: "auto",
    help: "json (one object per line) or text; auto: text on a terminal, else json",
  },
  {
    flag: "--metrics-port",
    env: "METRICS_PORT",
    key: "metricsPort",
    kind: "port",
    default: undefined,
    help: "serve GET /metrics on this port instead of the main one",
  },
  {
    flag: "--nats",
    env: "NATS_URL",
    key: "nats",
    kind: "string",
    default: undefined,
    help: "NATS URL[,URL...]: clustered mode on JetStream (needs --apps)",
  },
  {
    flag: "--node-id",
    env: "NODE_ID",
    key: "nodeId",
    kind: "string",
    default: hostname(),
    help: "this node's unique name in logs, metrics and the cluster",
  },
  {
    flag: "--console-secret",
    env: "CONSOLE_SECRET",
    key: "consoleSecret",
    kind: "string",
    default: undefined,
    help: "admin secret of the operators' console at /console/ (off when unset)",
  },
  {
    flag: "--no-playground",
    env: "PLAYGROUND",
    key: "playground",
    kind: "bool",
    default: true,
    help: "turn off the playground page at / (PLAYGROUND=0)",
  },
];

/** `--help` text. */
export function helpText(version: string): string {
  const lines = [
    `switchboard ${version}: real-time channels, durable objects and chat in one binary`,
    "",
    "Usage: switchboard [flags]            start the server",
    "       switchboard backup <path>      write a consistent copy of the data to <path>",
    "       switchboard cluster status --data-dir <dir> [<other dir> ...]",
    "                                      a stopped node's store: diverged mark, confirmed position",
    "       switchboard cluster refound --data-dir <dir> --nats <urls> [<other dir> ...]",
    "                                      make that store the cluster log's new base (every node stopped)",
    "",
    "Flags (each also read from the environment variable shown):",
  ];
  for (const f of FLAGS) {
    const arg = f.kind === "bool" ? "" : " <value>";
    const def = f.default === undefined ? "none" : String(f.default);
    lines.push(
      `  ${(f.flag + arg).padEnd(28)} ${f.env.padEnd(18)} default ${def.padEnd(8)} ${f.help}`,
    );
  }
  lines.push("  --help                                                       print this help");
  lines.push("  --version                                                    print the version");
  return lines.join("\n");
}

/** Parses flags (which win) and environment variables into a Config. Throws ConfigError. */
export function parseConfig(argv: string[], env: Record<string, string | undefined>): Config {
  const config = Object.fromEntries(FLAGS.map((f) => [f.key, f.default])) as unknown as Config;
  config.command = "serve";
  for (const f of FLAGS) {
    const raw = env[f.env];
    if (raw !== undefined && raw !== "") setValue(config, f, raw, f.env);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") return { ...config, command: "help" };
    if (arg === "--version" || arg === "-v") return { ...config, command: "version" };
    if (arg === "backup" && i === 0) {
      config.command = "backup";
      config.backupPath = argv[++i];
      if (!config.backupPath) {
        throw new ConfigError("backup needs a destination path: switchboard backup <path>");
      }
      continue;
    }
    if (arg === "cluster" && i === 0) {
      const sub = argv[++i];
      if (sub !== "status" && sub !== "refound") {
        throw new ConfigError(
          "cluster needs status or refound: switchboard cluster status --data-dir <dir>",
        );
      }
      config.command = sub === "status" ? "cluster-status" : "cluster-refound";
      config.otherDataDirs = [];
      continue;
    }
    if (config.otherDataDirs && !arg.startsWith("-")) {
      config.otherDataDirs.push(arg);
      continue;
    }
    const [name, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const spec = FLAGS.find((f) => f.flag === name);
    if (!spec) throw new ConfigError(`unknown flag ${name} (see --help)`);
    if (spec.kind === "bool") {
      (config as unknown as Record<string, unknown>)[spec.key] = false;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConfigError(`flag ${name} needs a value`);
    setValue(config, spec, value, name);
  }
  if (!["debug", "info", "warn", "error", "silent"].includes(config.logLevel)) {
    throw new ConfigError(
      `--log-level must be debug, info, warn, error or silent, got "${config.logLevel}"`,
    );
  }
  if (!["json", "text", "auto"].includes(config.logFormat)) {
    throw new ConfigError(`--log-format must be json, text or auto, got "${config.logFormat}"`);
  }
  if (config.consoleSecret !== undefined && config.consoleSecret.length < 16) {
    throw new ConfigError(
      "--console-secret must be at least 16 characters (it opens every app's console)",
    );
  }
  if (config.command === "cluster-refound" && config.nats === undefined) {
    throw new ConfigError(
      "cluster refound needs --nats: switchboard cluster refound --data-dir <dir> --nats <urls>",
    );
  }
  if (config.nats !== undefined && config.appsFile === undefined && config.command === "serve") {
    throw new ConfigError("--nats needs --apps: every node of a cluster serves the same apps file");
  }
  return config;
}

function setValue(config: Config, f: FlagSpec, raw: string, source: string) {
  const target = config as unknown as Record<string, unknown>;
  if (f.kind === "string") target[f.key] = raw;
  else if (f.kind === "bool") {
    target[f.key] = !["0", "false", "no", "off"].includes(raw.toLowerCase());
  } else {
    const n = Number(raw);
    const max = f.kind === "port" ? 65535 : Number.MAX_SAFE_INTEGER;
    if (!Number.isInteger(n) || n < 0 || n > max) {
      throw new ConfigError(`${source} must be an integer from 0 to ${max}, got "${raw}"`);
    }
    target[f.key] = n;
  }
}
