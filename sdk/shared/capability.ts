/**
 * The capability grammar `product:verb:resource` and its matcher (see docs/auth.md), shared by
 * the server (lib/auth re-exports it) and the server SDK (`@switchboard/server`), so both read
 * one grammar.
 *
 * - `channel:{subscribe|publish|presence}:{channel name}` (the name may contain `:`)
 * - `object:read:{type}/{key}`
 * - `chat:{verb}:{threadId}` where verb is `subscribe`, `cancel_own`, `tool_approval` or
 *   `publish:{user_message|run_lifecycle|token|message|cancel_any}` (so a chat verb may itself
 *   contain one `:`).
 *
 * Granted resource forms: exact; a lone `*` (every resource); or a prefix: any resource ending
 * in `*` (`order/*`, `private-user-42-*`) matches every resource starting with what precedes the
 * `*`. A `*` anywhere else (`a*b`, a `*` with more after it) makes the capability malformed.
 *
 * A *needed* capability (what a join or push requires) names a real resource, taken literally:
 * a thread id `t*1` is the name `t*1`, matched by a lone `*` grant, a prefix grant such as `t*`,
 * or a built-in grant set (`literal` principals: the anonymous chat set, agents), never
 * "parsed" as a wildcard.
 *
 * Object resources are `{type}/{key}`: types never contain `/` (or `:`), so the first `/`
 * splits them unambiguously (`object:read:a/b/c` is type `a`, key `b/c`); a grant whose type
 * part holds `:` (`object:read:a:b/c`) is malformed, since no object can have that type.
 */
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

/**
 * Why an object type is unusable, or null: a type never holds `/` (the first `/` of a
 * capability's `{type}/{key}` ends it) nor `:` (the first `:` after it in a topic ends it).
 * The HTTP routes, the `durable` join and the server SDK all refuse such types with this text.
 */
export function objectTypeProblem(type: string): string | null {
  return /[/:]/.test(type) ? 'object type must not contain "/" or ":"' : null;
}

function resourceForm(resource: string): Pick<Capability, "kind" | "prefix"> | null {
  if (resource === "") return null;
  const star = resource.indexOf("*");
  if (star === -1) return { kind: "exact", prefix: resource };
  if (star !== resource.length - 1) return null;
  if (resource === "*") return { kind: "all", prefix: "" };
  return { kind: "prefix", prefix: resource.slice(0, -1) };
}

function objectResourceOk(c: Pick<Capability, "kind" | "prefix">): boolean {
  if (c.kind === "all") return true;
  const slash = c.prefix.indexOf("/");
  // The type (or the part of it a prefix names) holds no `:`, like every real type.
  if (objectTypeProblem(slash === -1 ? c.prefix : c.prefix.slice(0, slash))) return false;
  // A prefix may stop inside the type (`ord*`); otherwise the type is non-empty, and an exact
  // resource has a non-empty key.
  if (slash === -1) return c.kind === "prefix";
  return slash > 0 && (c.kind === "prefix" || slash < c.prefix.length - 1);
}

/** Splits `product:verb:resource` (chat publish verbs keep their qualifier); null if unknown. */
function split(
  s: unknown,
): { product: Capability["product"]; verb: string; resource: string } | null {
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
  return { product: product as Capability["product"], verb, resource: rest };
}

/** Parses one granted capability string; null when it is not well-formed. */
export function parseCapability(s: unknown): Capability | null {
  const parts = split(s);
  if (!parts) return null;
  const form = resourceForm(parts.resource);
  if (!form) return null;
  if (parts.product === "object" && !objectResourceOk(form)) return null;
  return { ...parts, ...form };
}

/** Parses a needed capability: its resource is a literal name (`*` is just a character). */
function parseNeed(s: string): Capability | null {
  const parts = split(s);
  if (!parts || parts.resource === "") return null;
  return { ...parts, kind: "exact", prefix: parts.resource };
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

/** Whether `grant` covers the literal resource of `need`. */
function covers(grant: Capability, need: Capability): boolean {
  if (grant.product !== need.product || grant.verb !== need.verb) return false;
  if (grant.kind === "all") return true;
  if (grant.kind === "prefix") return need.resource.startsWith(grant.prefix);
  return grant.resource === need.resource;
}

/** Answers a `can()` remembers (a socket asks the same few needs on every push). */
const REMEMBERED_NEEDS = 64;

/** A `can(needed)` over `granted`; `literal` grants name exact resources, `*` included. */
export function capabilityMatcher(granted: string[], literal = false): (needed: string) => boolean {
  const parsed = granted.map(literal ? parseNeed : parseCapability)
    .filter((c): c is Capability => c !== null);
  const answers = new Map<string, boolean>();
  return (needed) => {
    let ok = answers.get(needed);
    if (ok === undefined) {
      const need = parseNeed(needed);
      ok = need !== null && parsed.some((g) => covers(g, need));
      if (answers.size >= REMEMBERED_NEEDS) answers.clear();
      answers.set(needed, ok);
    }
    return ok;
  };
}

/** Whether the granted list covers `needed` (exact, lone `*` and `prefix/*` grants honoured). */
export function capabilityMatches(granted: string[], needed: string): boolean {
  return capabilityMatcher(granted)(needed);
}
