/**
 * Who may use the operators' console (docs/console.md "Who sees what"): the admin secret opens
 * every app, an app's own secret opens that app alone. A session is an HMAC-signed cookie (it
 * survives a restart and works on every node of a cluster that has the same console secret)
 * carrying a random id, its scope, its expiry and a fingerprint of the secret that opened it:
 * changing that secret (or the console secret) ends the session. Logging out records the
 * session's id as ended in the store (replicated in a cluster, kept until the session would
 * have expired), so a copy of the cookie no longer works anywhere.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Key, Table } from "../store/table.ts";
import type { AppRegistry } from "../config/apps.ts";
import type { Storage } from "../store/storage.ts";

/** The session cookie's name. */
export const COOKIE = "sb_console";
/** How long a session lasts. */
export const SESSION_TTL_MS = 12 * 3600 * 1000;

/** What a session may see: every app (`admin`) or one app by id. */
export interface Session {
  /** The session's random id (what logout records as ended); a new one when minted without. */
  id?: string;
  admin: boolean;
  /** The one app a non-admin session opens. */
  appId?: string;
  /** Unix ms at which the session ends. */
  expires: number;
}

/** Ids of sessions ended by logout, until they would have expired. */
export interface EndedSessions {
  has(id: string): boolean;
  /** Records `id` as ended (kept until `expires`); resolves once durable. */
  add(id: string, expires: number): Promise<void>;
}

/** Ended sessions kept in the store's `console:ended_sessions` database (replicated in a
 * cluster, so a logout on one node ends the session on every node); rows past their session's
 * expiry are removed on the next logout. */
export function storedEndedSessions(env: Storage): EndedSessions {
  const db: Table<number> = env.db<number>("console:ended_sessions");
  return {
    has: (id) => db.get(["e", id]) !== undefined,
    add: (id, expires) => {
      const now = Date.now();
      const old: Key[] = [];
      for (const { key, value } of db.getRange({ start: ["e"], end: ["f"], limit: 10_000 })) {
        if (value <= now) old.push(key);
      }
      return env.transaction(() => {
        for (const key of old) db.remove(key);
        db.put(["e", id], expires);
      });
    },
  };
}

/** Ended sessions in memory only (tests, and sessions checked without a store). */
export function memoryEndedSessions(): EndedSessions {
  const ended = new Map<string, number>();
  return {
    has: (id) => ended.has(id),
    add: (id, expires) => {
      ended.set(id, expires);
      return Promise.resolve();
    },
  };
}

/** Issues and checks sessions for one admin secret over the apps. */
export class Sessions {
  #key: Buffer;
  #admin: string;
  #apps: AppRegistry;
  #ttlMs: number;
  #ended: EndedSessions;

  constructor(
    adminSecret: string,
    apps: AppRegistry,
    ttlMs = SESSION_TTL_MS,
    ended: EndedSessions = memoryEndedSessions(),
  ) {
    this.#key = createHmac("sha256", adminSecret).update("switchboard console sessions").digest();
    this.#admin = adminSecret;
    this.#apps = apps;
    this.#ttlMs = ttlMs;
    this.#ended = ended;
  }

  /** Ends `session` on the server: its cookie (and any copy) is refused from now on. */
  async logout(session: Session): Promise<void> {
    if (session.id) await this.#ended.add(session.id, session.expires);
  }

  /** The session a secret opens (constant-time comparisons), or undefined. */
  login(secret: string, now = Date.now()): Session | undefined {
    const given = this.#mac("secret", secret);
    let found: Session | undefined;
    if (timingSafeEqual(given, this.#mac("secret", this.#admin))) {
      found = { id: newId(), admin: true, expires: now + this.#ttlMs };
    }
    for (const app of this.#apps.all()) {
      if (timingSafeEqual(given, this.#mac("secret", app.secret)) && !found) {
        found = { id: newId(), admin: false, appId: app.id, expires: now + this.#ttlMs };
      }
    }
    return found;
  }

  /** The cookie value of `session`: `payload.signature`, both base64url. */
  cookie(session: Session): string {
    const payload = Buffer.from(JSON.stringify({
      n: session.id ?? newId(),
      a: session.admin ? 1 : 0,
      i: session.appId ?? null,
      x: session.expires,
      f: this.#fingerprint(session),
    })).toString("base64url");
    return `${payload}.${this.#mac("cookie", payload).toString("base64url")}`;
  }

  /** The session a cookie value carries, when its signature is ours, it has not expired and
   * the secret that opened it is still the same; else undefined. */
  verify(value: string | undefined, now = Date.now()): Session | undefined {
    if (!value || value.length > 1024) return undefined;
    const dot = value.indexOf(".");
    if (dot < 0) return undefined;
    const payload = value.slice(0, dot);
    const sig = Buffer.from(value.slice(dot + 1), "base64url");
    const want = this.#mac("cookie", payload);
    if (sig.length !== want.length || !timingSafeEqual(sig, want)) return undefined;
    let p: { n?: unknown; a?: unknown; i?: unknown; x?: unknown; f?: unknown };
    try {
      p = JSON.parse(Buffer.from(payload, "base64url").toString());
    } catch {
      return undefined;
    }
    if (typeof p.x !== "number" || p.x <= now) return undefined;
    // Without an id (cookies of older versions) a session could not be ended: log in again.
    if (typeof p.n !== "string" || p.n === "" || this.#ended.has(p.n)) return undefined;
    const session: Session = p.a === 1
      ? { id: p.n, admin: true, expires: p.x }
      : { id: p.n, admin: false, appId: typeof p.i === "string" ? p.i : "", expires: p.x };
    if (!session.admin && !this.#apps.byId(session.appId!)) return undefined;
    return p.f === this.#fingerprint(session) ? session : undefined;
  }

  /** A short MAC of the secret behind a session (the admin secret or the app's secret). */
  #fingerprint(session: Session): string {
    const secret = session.admin ? this.#admin : this.#apps.byId(session.appId!)?.secret ?? "";
    return this.#mac("fingerprint", secret).toString("base64url").slice(0, 22);
  }

  #mac(purpose: string, text: string): Buffer {
    return createHmac("sha256", this.#key).update(purpose).update("\0").update(text).digest();
  }
}

/** A new random session id. */
function newId(): string {
  return randomBytes(16).toString("base64url");
}

/** Whether a session may see the app `appId`. */
export function mayOpen(session: Session, appId: string): boolean {
  return session.admin || session.appId === appId;
}

/** A secret for display: its first four characters and its length, never the whole. */
export function maskSecret(secret: string): string {
  return `${secret.slice(0, Math.min(4, Math.floor(secret.length / 4)))}… (${secret.length} chars)`;
}

/**
 * Failed logins per client address: after `max` failures within `windowMs` every login from
 * that address is refused (429) until the window ends, right secret or not. The table is
 * bounded (`capacity` addresses) and volume cannot empty it: ended windows go first, then the
 * oldest addresses still under `max`; a locked address is never forgotten before its window
 * ends. When every entry is locked, an address not in the table is refused too until one
 * window ends (a global limit: the console locks rather than let guesses through untracked).
 */
export class LoginLimiter {
  #failures = new Map<string, { count: number; resetAt: number }>();
  #max: number;
  #windowMs: number;
  #capacity: number;

  constructor(max = 10, windowMs = 15 * 60_000, capacity = 10_000) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#capacity = capacity;
  }

  /** Seconds until `peer` may try again (0: it may try now). */
  retryAfter(peer: string, now = Date.now()): number {
    const f = this.#failures.get(peer);
    if (f && f.resetAt > now) {
      return f.count >= this.#max ? Math.ceil((f.resetAt - now) / 1000) : 0;
    }
    if (this.#failures.size < this.#capacity || this.#makeRoom(now)) return 0;
    // Full of locked addresses: nobody new until the first of their windows ends.
    let first = Infinity;
    for (const e of this.#failures.values()) first = Math.min(first, e.resetAt);
    return Math.max(1, Math.ceil((first - now) / 1000));
  }

  /** Counts a failed login from `peer`. */
  failed(peer: string, now = Date.now()): void {
    let f = this.#failures.get(peer);
    if (!f || f.resetAt <= now) {
      this.#failures.delete(peer);
      if (this.#failures.size >= this.#capacity && !this.#makeRoom(now)) return;
      this.#failures.set(peer, f = { count: 0, resetAt: now + this.#windowMs });
    }
    f.count++;
  }

  /** Addresses in the table. */
  get size(): number {
    return this.#failures.size;
  }

  /** Frees one entry or more: ended windows, else the oldest address not locked. False when
   * every entry is locked. */
  #makeRoom(now: number): boolean {
    for (const [peer, f] of this.#failures) if (f.resetAt <= now) this.#failures.delete(peer);
    if (this.#failures.size < this.#capacity) return true;
    for (const [peer, f] of this.#failures) {
      if (f.count < this.#max) {
        this.#failures.delete(peer);
        return true;
      }
    }
    return false;
  }
}

/**
 * Whether a state-changing request is same-site: an `Origin` header must name this scheme and
 * host (`scheme` is the request's own, `http:` or `https:`; `X-Forwarded-Proto` from a TLS
 * proxy decides it when present); a request without one must not be marked cross-site by
 * `Sec-Fetch-Site` (browsers send one or the other; non-browser clients neither).
 */
export function sameOrigin(headers: Headers, scheme: string): boolean {
  const origin = headers.get("origin");
  const host = headers.get("host");
  if (origin !== null) {
    const forwarded = headers.get("x-forwarded-proto")?.split(",")[0].trim().toLowerCase();
    const want = forwarded ? `${forwarded}:` : scheme;
    try {
      const url = new URL(origin);
      return origin !== "null" && host !== null && url.protocol === want && url.host === host;
    } catch {
      return false;
    }
  }
  const site = headers.get("sec-fetch-site");
  return site === null || site === "same-origin" || site === "none";
}
