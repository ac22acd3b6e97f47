/**
 * Who may use the operators' console (docs/console.md "Who sees what"): the admin secret opens
 * every app, an app's own secret opens that app alone. A session is an HMAC-signed cookie (no
 * server-side table, so it survives a restart and works on every node of a cluster that has
 * the same console secret) carrying its scope, its expiry and a fingerprint of the secret
 * that opened it: changing that secret (or the console secret) ends the session.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AppRegistry } from "../config/apps.ts";

/** The session cookie's name. */
export const COOKIE = "sb_console";
/** How long a session lasts. */
export const SESSION_TTL_MS = 12 * 3600 * 1000;

/** What a session may see: every app (`admin`) or one app by id. */
export interface Session {
  admin: boolean;
  /** The one app a non-admin session opens. */
  appId?: string;
  /** Unix ms at which the session ends. */
  expires: number;
}

/** Issues and checks sessions for one admin secret over the apps. */
export class Sessions {
  #key: Buffer;
  #admin: string;
  #apps: AppRegistry;
  #ttlMs: number;

  constructor(adminSecret: string, apps: AppRegistry, ttlMs = SESSION_TTL_MS) {
    this.#key = createHmac("sha256", adminSecret).update("switchboard console sessions").digest();
    this.#admin = adminSecret;
    this.#apps = apps;
    this.#ttlMs = ttlMs;
  }

  /** The session a secret opens (constant-time comparisons), or undefined. */
  login(secret: string, now = Date.now()): Session | undefined {
    const given = this.#mac("secret", secret);
    let found: Session | undefined;
    if (timingSafeEqual(given, this.#mac("secret", this.#admin))) {
      found = { admin: true, expires: now + this.#ttlMs };
    }
    for (const app of this.#apps.all()) {
      if (timingSafeEqual(given, this.#mac("secret", app.secret)) && !found) {
        found = { admin: false, appId: app.id, expires: now + this.#ttlMs };
      }
    }
    return found;
  }

  /** The cookie value of `session`: `payload.signature`, both base64url. */
  cookie(session: Session): string {
    const payload = Buffer.from(JSON.stringify({
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
    let p: { a?: unknown; i?: unknown; x?: unknown; f?: unknown };
    try {
      p = JSON.parse(Buffer.from(payload, "base64url").toString());
    } catch {
      return undefined;
    }
    if (typeof p.x !== "number" || p.x <= now) return undefined;
    const session: Session = p.a === 1
      ? { admin: true, expires: p.x }
      : { admin: false, appId: typeof p.i === "string" ? p.i : "", expires: p.x };
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
 * that address is refused (429) until the window ends, right secret or not.
 */
export class LoginLimiter {
  #failures = new Map<string, { count: number; resetAt: number }>();
  #max: number;
  #windowMs: number;

  constructor(max = 10, windowMs = 15 * 60_000) {
    this.#max = max;
    this.#windowMs = windowMs;
  }

  /** Seconds until `peer` may try again (0: it may try now). */
  retryAfter(peer: string, now = Date.now()): number {
    const f = this.#failures.get(peer);
    if (!f || f.resetAt <= now) return 0;
    return f.count >= this.#max ? Math.ceil((f.resetAt - now) / 1000) : 0;
  }

  /** Counts a failed login from `peer`. */
  failed(peer: string, now = Date.now()): void {
    let f = this.#failures.get(peer);
    if (!f || f.resetAt <= now) {
      if (this.#failures.size >= 10_000) this.#prune(now);
      this.#failures.set(peer, f = { count: 0, resetAt: now + this.#windowMs });
    }
    f.count++;
  }

  /** Forgets ended windows (and, if still full, the oldest entries). */
  #prune(now: number) {
    for (const [peer, f] of this.#failures) if (f.resetAt <= now) this.#failures.delete(peer);
    for (const peer of this.#failures.keys()) {
      if (this.#failures.size < 10_000) break;
      this.#failures.delete(peer);
    }
  }
}

/**
 * Whether a state-changing request is same-site: an `Origin` header must name this host; a
 * request without one must not be marked cross-site by `Sec-Fetch-Site` (browsers send one
 * or the other; non-browser clients neither).
 */
export function sameOrigin(headers: Headers): boolean {
  const origin = headers.get("origin");
  const host = headers.get("host");
  if (origin !== null) {
    try {
      return origin !== "null" && host !== null && new URL(origin).host === host;
    } catch {
      return false;
    }
  }
  const site = headers.get("sec-fetch-site");
  return site === null || site === "same-origin" || site === "none";
}
