/**
 * Structured logs (pino): one JSON object per line on stdout, or text for people (on a
 * terminal by default, or `--log-format text`). Fields never carry secrets or tokens: the keys below are redacted wherever they
 * appear. Call `configureLog` once at start-up; until then logs are JSON at `info`.
 */
import process from "node:process";
import pino from "pino";

/** Fields of one log line (bounded values: no payloads, no secrets). */
export type Fields = Record<string, unknown>;

/** Levels, lowest first; `silent` logs nothing. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = typeof LOG_LEVELS[number];
export type LogFormat = "json" | "text";

const REDACT = [
  "secret",
  "app_secret",
  "agent_secret",
  "auth",
  "token",
  "*.secret",
  "*.auth",
  "*.token",
];

/** A text line for people: `time LEVEL msg key=value ...`. */
function textLine(line: string): string {
  const { level, time, msg, ...rest } = JSON.parse(line);
  const fields = Object.entries(rest).map(([k, v]) =>
    `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
  );
  return `${time} ${String(level).toUpperCase().padEnd(5)} ${msg ?? ""}${
    fields.length ? " " + fields.join(" ") : ""
  }\n`;
}

function make(
  level: LogLevel,
  format: LogFormat,
  write?: (line: string) => void,
  base?: Fields,
): pino.Logger {
  const dest = write
    ? { write: (line: string) => write(format === "json" ? line : textLine(line)) }
    : format === "json"
    ? pino.destination({ dest: 1, sync: true })
    : { write: (line: string) => void process.stdout.write(textLine(line)) };
  return pino({
    level,
    base: base ?? undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT, censor: "[redacted]" },
  }, dest);
}

/**
 * The format to log in: `json` and `text` as given; `auto` (the default) is text when stdout is
 * a terminal (a person reading) and JSON otherwise (a pipe, a file, a log collector).
 */
export function resolveLogFormat(
  setting: string,
  stdoutIsTerminal = process.stdout.isTTY === true,
): LogFormat {
  if (setting === "auto") return stdoutIsTerminal ? "text" : "json";
  return setting === "text" ? "text" : "json";
}

let logger = make("info", "json");
/** Start-up lines (where to connect) are printed whatever the level. */
let announcer = logger;

/** Sets the level and format (from `--log-level`, `--log-format`); `write` replaces stdout
 * (tests capture lines with it); `base` fields go on every line (the cluster's node id). */
export function configureLog(
  level: LogLevel,
  format: LogFormat,
  write?: (line: string) => void,
  base?: Fields,
): void {
  logger = make(level, format, write, base);
  announcer = make("info", format, write, base);
}

/** The logger: `log.info("msg", { field })`. Errors are logged with their message and stack. */
export const log = {
  debug: (msg: string, fields: Fields = {}) => logger.debug(fields, msg),
  info: (msg: string, fields: Fields = {}) => logger.info(fields, msg),
  warn: (msg: string, fields: Fields = {}) => logger.warn(fields, msg),
  error: (msg: string, fields: Fields = {}) => logger.error(fields, msg),
  /** An info line printed at any level: where the server listens, the development app. */
  announce: (msg: string, fields: Fields = {}) => announcer.info(fields, msg),
};

/** An error as log fields. */
export function errorFields(err: unknown): Fields {
  return err instanceof Error ? { error: err.message, stack: err.stack } : { error: String(err) };
}
