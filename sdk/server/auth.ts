/**
 * The issuing half of the server SDK: capability builders, fast-path minting helpers, the
 * credentialed HTTP transport and `SwitchboardError`. `class Switchboard` (mod.ts) wires them up.
 */
import {
  CHAT_CLIENT_VERBS,
  objectTypeProblem,
  parseCapability,
  validateCapabilities,
} from "../shared/capability.ts";

/** The resources a token should grant (see docs/auth.md "Grants"). */
export interface Grants {
  /** `channel:subscribe:{name}` for each. */
  channels?: string[];
  /** `channel:subscribe:{name}` and `channel:presence:{name}` for each. */
  presence?: string[];
  /** `channel:publish:{name}` for each. */
  publish?: string[];
  /** `object:read:{type}/{key}` for each (a type holding `/` or `:` throws). */
  objects?: { type: string; key: string }[];
  /** The default client chat set (subscribe, publish:user_message, cancel_own, tool_approval). */
  threads?: string[];
  /** Appended verbatim. */
  capabilities?: string[];
}

/** The result of a token call: the token, plus `channel_data` for presence channels. */
export interface AuthResult {
  auth: string;
  channel_data?: string;
}

/** Thrown by SDK HTTP calls on a non-2xx answer; `body` is the parsed JSON (or text). */
export class SwitchboardError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The response body, parsed as JSON when possible. */
  readonly body: unknown;

  /** Builds the error; `message` defaults to the first JSON:API detail/title or `{ error }`. */
  constructor(status: number, body: unknown, message?: string) {
    super(message ?? `Switchboard answered HTTP ${status}: ${describe(body)}`);
    this.name = "SwitchboardError";
    this.status = status;
    this.body = body;
  }
}

function describe(body: unknown): string {
  if (typeof body === "object" && body !== null) {
    const b = body as { errors?: { title?: string; detail?: string }[]; error?: unknown };
    const first = Array.isArray(b.errors) ? b.errors[0] : undefined;
    if (first) return first.detail ? `${first.title}: ${first.detail}` : String(first.title);
    if (typeof b.error === "string") return b.error;
  }
  return typeof body === "string" && body !== "" ? body : "(no body)";
}

/** Connection settings shared by every SDK HTTP call. */
export interface Connection {
  baseUrl: string;
  appKey: string;
  appSecret: string;
}

/**
 * Sends `method path` with the credential headers and an optional JSON body; resolves with the
 * parsed JSON (undefined for an empty body such as 204) or throws `SwitchboardError`.
 */
export async function sendRequest(
  conn: Connection,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<unknown> {
  const init: RequestInit = {
    method,
    headers: {
      "X-App-Key": conn.appKey,
      "X-App-Secret": conn.appSecret,
      ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      ...headers,
    },
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${conn.baseUrl}${path}`, init);
  const text = await res.text();
  let parsed: unknown = text === "" ? undefined : text;
  try {
    if (text !== "") parsed = JSON.parse(text);
  } catch { /* keep the text */ }
  if (!res.ok) throw new SwitchboardError(res.status, parsed);
  return parsed;
}

function requireName(what: string, value: unknown): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${what} must be a non-empty string, got ${JSON.stringify(value)}.`);
  }
  if (value.includes("*")) {
    throw new TypeError(`${what} ${JSON.stringify(value)} must not contain "*" (a wildcard).`);
  }
  return value;
}

/** Throws unless `list` is a valid capability list; returns it. */
export function checkCapabilities(list: string[]): string[] {
  const checked = validateCapabilities(list);
  if (!checked.ok) throw new TypeError(`Invalid capability list: ${checked.detail}.`);
  return checked.capabilities;
}

/**
 * Capabilities of `authenticate`: `channel:subscribe:{name}`, plus `channel:presence:{name}`
 * and `channel_data` for `presence-` channels (the client id becomes `String(user_id)`). Throws
 * for other prefixes, wildcards, or a presence call without `user_id`.
 */
export function channelGrant(
  channelName: string,
  userData?: Record<string, unknown>,
): { capabilities: string[]; clientId?: string; channelData?: string } {
  requireName("channelName", channelName);
  if (channelName.startsWith("private-")) {
    return { capabilities: checkCapabilities([`channel:subscribe:${channelName}`]) };
  }
  if (!channelName.startsWith("presence-")) {
    throw new TypeError(
      `authenticate() only issues tokens for private- and presence- channels, got ${
        JSON.stringify(channelName)
      }.`,
    );
  }
  const userId = userData?.user_id;
  if (userId === undefined || userId === null || userId === "") {
    throw new TypeError(
      `authenticate() for presence channel ${channelName} needs userData.user_id.`,
    );
  }
  return {
    capabilities: checkCapabilities([
      `channel:subscribe:${channelName}`,
      `channel:presence:${channelName}`,
    ]),
    clientId: String(userId),
    channelData: JSON.stringify(userData),
  };
}

/** Capability of `authenticateObject`: `object:read:{type}/{key}` (no wildcards; no `/` or `:` in the type). */
export function objectGrant(type: string, key: string): string[] {
  requireName("type", type);
  requireName("key", key);
  return checkCapabilities([objectResource(type, key)]);
}

/** `object:read:{type}/{key}`; throws when the type is empty or holds `/` or `:`. */
function objectResource(type: unknown, key: unknown): string {
  if (typeof type !== "string" || type === "" || typeof key !== "string" || key === "") {
    throw new TypeError(
      `Object grants need a non-empty type and key, got ${JSON.stringify({ type, key })}.`,
    );
  }
  const problem = objectTypeProblem(type);
  if (problem) throw new TypeError(`${problem}, got ${JSON.stringify(type)}.`);
  return `object:read:${type}/${key}`;
}

/**
 * Chat capabilities for one thread: the default client set when `verbs` is undefined; else each
 * verb short (`subscribe`, `publish:user_message`) or fully qualified (`chat:subscribe:t1`).
 * Throws for an empty list, an unknown verb, or a wildcard thread id.
 */
export function chatGrant(threadId: string, verbs?: string[]): string[] {
  requireName("threadId", threadId);
  if (verbs !== undefined && (!Array.isArray(verbs) || verbs.length === 0)) {
    throw new TypeError("verbs must be a non-empty array (omit it for the default client set).");
  }
  const list = (verbs ?? CHAT_CLIENT_VERBS).map((verb) => {
    if (typeof verb !== "string") {
      throw new TypeError(`Chat verb ${JSON.stringify(verb)} is not a string.`);
    }
    const qualified = verb.startsWith("chat:") && parseCapability(verb)
      ? verb
      : `chat:${verb}:${threadId}`;
    if (!parseCapability(qualified)) {
      throw new TypeError(`Unknown chat verb ${JSON.stringify(verb)}.`);
    }
    return qualified;
  });
  return checkCapabilities([...new Set(list)]);
}

/**
 * The de-duplicated capability list for `grants`, in the order channels, presence, publish,
 * objects, threads, capabilities. Wildcard patterns in grants are allowed (they are explicit).
 * Throws when the result is empty or any entry is malformed.
 */
export function grantCapabilities(grants: Grants): string[] {
  if (typeof grants !== "object" || grants === null) {
    throw new TypeError("grants must be an object.");
  }
  const out: string[] = [];
  for (const name of grants.channels ?? []) out.push(`channel:subscribe:${name}`);
  for (const name of grants.presence ?? []) {
    out.push(`channel:subscribe:${name}`, `channel:presence:${name}`);
  }
  for (const name of grants.publish ?? []) out.push(`channel:publish:${name}`);
  for (const { type, key } of grants.objects ?? []) out.push(objectResource(type, key));
  for (const thread of grants.threads ?? []) {
    for (const verb of CHAT_CLIENT_VERBS) out.push(`chat:${verb}:${thread}`);
  }
  out.push(...(grants.capabilities ?? []));
  return checkCapabilities([...new Set(out)]);
}
