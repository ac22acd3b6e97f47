// The apps file (README.md "Apps file"): reading and validating it into `App`s with errors that
// name the problem, and the development app made when there is none.
import { readFileSync } from "node:fs";
import { type App, APP_DEFAULTS } from "./apps.ts";
import {
  LIMIT_KEYS,
  parseLimits,
  parseWebhooks,
  soketiAliases,
  unknownKey,
} from "./app_settings.ts";
import { ConfigError } from "./config.ts";
import { checkAppIdentities } from "./app_ids.ts";

const KNOWN = new Set([
  "id",
  "key",
  "secret",
  "name",
  "enable_user_authentication",
  "enable_client_messages",
  "max_client_events_per_sec",
  "max_backend_events_per_sec",
  "allowed_origins",
  "webhooks",
  "max_connections",
  "enabled",
  "user_authentication_timeout",
  "webhook_batching",
  ...LIMIT_KEYS,
]);

/** `*`, or `scheme://host[:port]` with an optional leading `*.` on the host. */
const ORIGIN_RE = /^(\*|[a-z][a-z0-9+.-]*:\/\/(\*\.)?[^/*\s]+)$/i;

/** Reads and validates the apps file (README.md "Apps file"). Throws ConfigError naming the
 * problem. */
export function loadAppsFile(path: string): App[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read apps file ${path}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`apps file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseApps(doc, path);
}

/** Validates an apps document `{ apps: [...] }`. */
export function parseApps(doc: unknown, where = "apps file"): App[] {
  const list = (doc as { apps?: unknown })?.apps;
  if (doc && typeof doc === "object" && !Array.isArray(doc)) {
    for (const k of Object.keys(doc)) if (k !== "apps") throw unknownKey(where, k);
  }
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(`${where}: expected { "apps": [ ... ] } with at least one app`);
  }
  const apps: App[] = list.map((raw, i): App => {
    const at = `${where}: apps[${i}]`;
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
      throw new ConfigError(`${at} must be an object`);
    }
    // Soketi's camelCase keys are read as ours (docs/pusher.md "Coming from Soketi or Reverb").
    const r = soketiAliases(raw as Record<string, unknown>, at);
    for (const k of Object.keys(r)) if (!KNOWN.has(k)) throw unknownKey(at, k);
    for (const k of ["id", "key", "secret"]) {
      if (typeof r[k] !== "string" || r[k] === "") {
        throw new ConfigError(`${at} is missing "${k}" (a non-empty string)`);
      }
    }
    const key = r.key as string, id = r.id as string;
    const eua = r.enable_user_authentication ?? APP_DEFAULTS.enable_user_authentication;
    if (eua !== 0 && eua !== 1) {
      throw new ConfigError(`${at}: enable_user_authentication must be 0 or 1`);
    }
    const ecm = r.enable_client_messages ?? APP_DEFAULTS.enable_client_messages;
    if (typeof ecm !== "boolean") {
      throw new ConfigError(`${at}: enable_client_messages must be true or false`);
    }
    const rate = (
      k: "max_client_events_per_sec" | "max_backend_events_per_sec" | "max_connections",
    ) => {
      const v = r[k] ?? (k === "max_connections" ? 0 : APP_DEFAULTS[k]);
      // 0 means unlimited (docs/channels.md).
      if (typeof v !== "number" || !(v >= 0) || !Number.isFinite(v)) {
        throw new ConfigError(`${at}: ${k} must be a number, 0 for unlimited`);
      }
      return v;
    };
    if (r.enabled !== undefined && typeof r.enabled !== "boolean") {
      throw new ConfigError(`${at}: enabled must be true or false`);
    }
    if (r.webhook_batching !== undefined && typeof r.webhook_batching !== "boolean") {
      throw new ConfigError(`${at}: webhook_batching must be true or false`);
    }
    const uat = r.user_authentication_timeout;
    if (
      uat !== undefined &&
      (typeof uat !== "number" || !Number.isInteger(uat) || uat < 1 || uat > 86_400)
    ) {
      throw new ConfigError(
        `${at}: user_authentication_timeout must be a whole number of seconds, 1 to 86400`,
      );
    }
    const limits = parseLimits(r, at);
    return {
      id,
      key,
      secret: r.secret as string,
      ...(typeof r.name === "string" ? { name: r.name } : {}),
      enable_user_authentication: eua,
      enable_client_messages: ecm,
      max_client_events_per_sec: rate("max_client_events_per_sec"),
      max_backend_events_per_sec: rate("max_backend_events_per_sec"),
      max_connections: rate("max_connections"),
      ...(r.allowed_origins !== undefined
        ? { allowed_origins: origins(r.allowed_origins, at) }
        : {}),
      ...(r.webhooks !== undefined ? { webhooks: parseWebhooks(r.webhooks, at) } : {}),
      ...(r.enabled !== undefined ? { enabled: r.enabled as boolean } : {}),
      ...(uat !== undefined ? { user_authentication_timeout: uat as number } : {}),
      ...(r.webhook_batching !== undefined
        ? { webhook_batching: r.webhook_batching as boolean }
        : {}),
      ...(limits ? { limits } : {}),
    };
  });
  // The id and key grammar, uniqueness, and no id equal to another app's key (app_ids.ts).
  checkAppIdentities(apps, where);
  return apps;
}

/** Validates `allowed_origins`: a non-empty array of origins (see ORIGIN_RE). */
function origins(v: unknown, at: string): string[] {
  if (
    !Array.isArray(v) || v.length === 0 ||
    !v.every((o) => typeof o === "string" && ORIGIN_RE.test(o))
  ) {
    throw new ConfigError(
      `${at}: allowed_origins must be a non-empty array of origins like "https://app.example", "https://*.example.com" or "*"`,
    );
  }
  return v as string[];
}

/** A fresh development app with random credentials. */
export function newDevelopmentApp(): App {
  const hex = (n: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0"))
      .join("");
  return {
    id: `dev-${hex(4)}`,
    key: hex(10),
    secret: hex(24),
    name: "development",
    ...APP_DEFAULTS,
  };
}
