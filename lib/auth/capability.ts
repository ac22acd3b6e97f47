/**
 * The capability grammar `product:verb:resource` and its matcher (see docs/auth.md).
 *
 * - `channel:{subscribe|publish|presence}:{channel name}` (the name may contain `:`)
 * - `object:read:{type}/{key}`
 * - `chat:{verb}:{threadId}` where verb is `subscribe`, `cancel_own`, `tool_approval` or
 *   `publish:{user_message|run_lifecycle|token|message|cancel_any}` (so a chat verb may itself
 *   contain one `:`).
 *
 * Resource forms: exact; a lone `*` (every resource); or a prefix ending in `/*` (`order/*`
 * matches every resource starting with `order/`). A `*` anywhere else makes the capability
 * malformed: mid-resource (`a*b`, or a `*` segment followed by more), or a trailing `*` that is
 * not a whole segment (`ab*`, `private-*`).
 */
import type { Principal } from "./principal.ts";

/** A well-formed capability, split into its parts. */
export interface Capability {
  product: "channel" | "object" | "chat";
  /** The verb; chat publish verbs keep their qualifier (`publish:user_message`). */
  verb: string;
  /** The resource as written (may be a wildcard form). */
  resource: string;
  /** `exact`, `all` (lone `*`) or `prefix` (ends in `/*`). */
  kind: "exact" | "all" | "prefix";
  /** For `prefix`, the resource without its trailing `*`; otherwise the resource itself. */
  prefix: string;
}

const CHANNEL_VERBS = new Set(["subscribe", "publish", "presence"]);
const OBJECT_VERBS = new Set(["read"]);
const CHAT_VERBS = new Set([
  "subscribe",
  "cancel_own",
  "tool_approval",
  "publish:user_message",
  "publish:run_lifecycle",
  "publish:token",
  "publish:message",
  "publish:cancel_any",
]);

/** The chat verbs a human client gets by default (the spec's "default client chat set"). */
export const CHAT_CLIENT_VERBS = [
  "subscribe",
  "publish:user_message",
  "cancel_own",
  "tool_approval",
] as const;

/** The chat verbs of an agent grant. */
export const CHAT_AGENT_VERBS = [
  "subscribe",
  "publish:run_lifecycle",
  "publish:token",
  "publish:message",
  "publish:cancel_any",
] as const;

function resourceForm(resource: string): Pick<Capability, "kind" | "prefix"> | null {
  if (resource === "") return null;
  const star = resource.indexOf("*");
  if (star === -1) return { kind: "exact", prefix: resource };
  if (star !== resource.length - 1) return null;
  if (resource === "*") return { kind: "all", prefix: "" };
  if (resource.endsWith("/*")) return { kind: "prefix", prefix: resource.slice(0, -1) };
  return null;
}

function objectResourceOk(resource: string): boolean {
  if (resource === "*") return true;
  const slash = resource.indexOf("/");
  // `{type}/{key}` with a non-empty type; the key may be `*` (prefix) but not empty.
  return slash > 0 && slash < resource.length - 1;
}

/** Parses one capability string; null when it is not well-formed. */
export function parseCapability(s: unknown): Capability | null {
  if (typeof s !== "string") return null;
  const first = s.indexOf(":");
  if (first <= 0) return null;
  const product = s.slice(0, first);
  let rest = s.slice(first + 1);
  let verb: string;
  const colon = rest.indexOf(":");
  if (colon <= 0) return null;
  verb = rest.slice(0, colon);
  rest = rest.slice(colon + 1);
  if (product === "chat" && verb === "publish") {
    const next = rest.indexOf(":");
    if (next <= 0) return null;
    verb = `publish:${rest.slice(0, next)}`;
    rest = rest.slice(next + 1);
  }
  const verbs = product === "channel"
    ? CHANNEL_VERBS
    : product === "object"
    ? OBJECT_VERBS
    : product === "chat"
    ? CHAT_VERBS
    : null;
  if (!verbs || !verbs.has(verb)) return null;
  const form = resourceForm(rest);
  if (!form) return null;
  if (product === "object" && !objectResourceOk(rest)) return null;
  return { product: product as Capability["product"], verb, resource: rest, ...form };
}

/** Checks a requested capability list: a non-empty, duplicate-free array of well-formed strings. */
export function validateCapabilities(
  list: unknown,
): { ok: true; capabilities: string[] } | { ok: false; detail: string } {
  if (!Array.isArray(list)) {
    return { ok: false, detail: "capabilities must be an array of strings" };
  }
  if (list.length === 0) return { ok: false, detail: "capabilities must not be empty" };
  const seen = new Set<string>();
  for (const entry of list) {
    if (typeof entry !== "string") {
      return { ok: false, detail: `capability ${JSON.stringify(entry)} is not a string` };
    }
    if (!parseCapability(entry)) {
      return { ok: false, detail: `capability ${JSON.stringify(entry)} is malformed` };
    }
    if (seen.has(entry)) {
      return { ok: false, detail: `capability ${JSON.stringify(entry)} is duplicated` };
    }
    seen.add(entry);
  }
  return { ok: true, capabilities: [...list] as string[] };
}

/** Whether `grant` covers `need`; a wildcard need is covered only by a grant at least as wide. */
function covers(grant: Capability, need: Capability): boolean {
  if (grant.product !== need.product || grant.verb !== need.verb) return false;
  if (grant.kind === "all") return true;
  if (need.kind === "all") return false;
  if (grant.kind === "prefix") return need.prefix.startsWith(grant.prefix);
  return need.kind === "exact" && grant.resource === need.resource;
}

function matcher(granted: string[]): (needed: string) => boolean {
  const parsed = granted.map(parseCapability).filter((c): c is Capability => c !== null);
  return (needed) => {
    const need = parseCapability(needed);
    return need !== null && parsed.some((g) => covers(g, need));
  };
}

/** Whether the granted list covers `needed` (exact, lone `*` and `prefix/*` grants honoured). */
export function capabilityMatches(granted: string[], needed: string): boolean {
  return matcher(granted)(needed);
}

/** Fields of a Principal; `can` is derived from `capabilities`. */
export interface PrincipalFields {
  socketId: string;
  clientId?: string;
  kind: Principal["kind"];
  capabilities: string[];
}

/** Builds a Principal whose `can()` uses `capabilityMatches` over its capabilities. */
export function makePrincipal(fields: PrincipalFields): Principal {
  const capabilities = [...fields.capabilities];
  const can = matcher(capabilities);
  const principal: Principal = { socketId: fields.socketId, kind: fields.kind, capabilities, can };
  if (fields.clientId !== undefined) principal.clientId = fields.clientId;
  return principal;
}
