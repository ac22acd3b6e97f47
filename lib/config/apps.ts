// Apps (tenants): the `App` settings and their defaults, origin and enabled checks, webhook
// event types, and the `AppRegistry` that looks apps up by key or id.
import type { AppLimitSettings } from "../limits.ts";

/** One tenant of the service, as configured in the apps file or created for development. */
export interface App {
  id: string;
  key: string;
  secret: string;
  name?: string;
  /** When 1, public channels and chat threads require a token. */
  enable_user_authentication: 0 | 1;
  /** When false, client publishes on channels are refused. */
  enable_client_messages: boolean;
  /** Rate cap on client publishes, per app, per second. */
  max_client_events_per_sec: number;
  /** Rate cap on trigger/push from the backend, per app, per second. */
  max_backend_events_per_sec: number;
  /** Most live WebSockets (both protocols) of the app; 0 for no limit. */
  max_connections?: number;
  /**
   * Browser origins allowed to open a WebSocket for this app (`https://app.example`,
   * `https://*.example.com`, or `*`). Absent: any origin.
   */
  allowed_origins?: string[];
  /** Pusher-style channel webhooks (docs/pusher.md "Webhooks"). */
  webhooks?: AppWebhook[];
  /** False: the app is switched off (Pusher sockets 4003, Phoenix joins and HTTP calls 403). */
  enabled?: boolean;
  /** Seconds a Pusher socket may stay without signing in or an authorized subscription (4009). */
  user_authentication_timeout?: number;
  /** True: webhook events staged together go in one request; default one event per request. */
  webhook_batching?: boolean;
  /** Per-app limits set in the apps file (docs/limits.md "Per-app limits"); `appLimit` reads
   * them with their defaults. */
  limits?: AppLimitSettings;
}

/** Whether `app` is switched on (`enabled` absent or true). */
export function appEnabled(app: App): boolean {
  return app.enabled !== false;
}

/** The channel events a webhook can ask for (Pusher's names). */
export const WEBHOOK_EVENT_TYPES = [
  "channel_occupied",
  "channel_vacated",
  "member_added",
  "member_removed",
  "client_event",
  "cache_miss",
] as const;

/** One of `WEBHOOK_EVENT_TYPES`. */
export type WebhookEventType = typeof WEBHOOK_EVENT_TYPES[number];

/** One webhook of an app: where to POST, which events, of which channels, with which headers. */
export interface AppWebhook {
  url: string;
  event_types: WebhookEventType[];
  /** Only events of channels whose names match every condition given. */
  filter?: { channel_name_starts_with?: string; channel_name_ends_with?: string };
  /** Extra request headers (never the signature headers nor `Content-Type`). */
  headers?: Record<string, string>;
}

/** Whether the webhook `hook` takes events of `channel` (its `filter`, if any, matches). */
export function webhookMatches(hook: AppWebhook, channel: string): boolean {
  const f = hook.filter;
  if (!f) return true;
  return (f.channel_name_starts_with === undefined ||
    channel.startsWith(f.channel_name_starts_with)) &&
    (f.channel_name_ends_with === undefined || channel.endsWith(f.channel_name_ends_with));
}

/**
 * Whether a WebSocket upgrade from `origin` may open a socket for `app`. Requests without an
 * Origin header (servers, native clients) are not browser requests and are allowed.
 */
export function originAllowed(app: App, origin: string | null): boolean {
  if (!app.allowed_origins || origin === null) return true;
  return app.allowed_origins.some((allowed) => {
    if (allowed === "*" || allowed === origin) return true;
    const star = allowed.indexOf("://*.");
    if (star < 0) return false;
    const scheme = allowed.slice(0, star + 3);
    const suffix = allowed.slice(star + 4); // ".example.com"
    return origin.startsWith(scheme) && origin.endsWith(suffix) &&
      origin.length > scheme.length + suffix.length;
  });
}

/** Defaults for the optional app settings (documented in README "Configuration"). */
export const APP_DEFAULTS = {
  enable_user_authentication: 0 as 0 | 1,
  enable_client_messages: true,
  max_client_events_per_sec: 100,
  max_backend_events_per_sec: 10_000,
};

/** Looks apps up by key or id. Immutable after start-up. */
export class AppRegistry {
  #byKey = new Map<string, App>();
  #byId = new Map<string, App>();

  constructor(apps: App[]) {
    for (const app of apps) {
      this.#byKey.set(app.key, app);
      this.#byId.set(app.id, app);
    }
  }

  /** The app whose App Key is `key`. */
  byKey(key: string): App | undefined {
    return this.#byKey.get(key);
  }

  /** The app whose App ID is `id`. */
  byId(id: string): App | undefined {
    return this.#byId.get(id);
  }

  /** The app whose App Key or App ID is `idOrKey` (the `{app_id}` path segment rule). */
  byIdOrKey(idOrKey: string): App | undefined {
    return this.#byKey.get(idOrKey) ?? this.#byId.get(idOrKey);
  }

  /** Every configured app. */
  all(): App[] {
    return [...this.#byKey.values()];
  }
}
