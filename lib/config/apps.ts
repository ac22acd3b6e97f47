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

  /** The app whose App Key or App ID is `idOrKey` (the `{app_id}` path segment rule). */
  byIdOrKey(idOrKey: string): App | undefined {
    return this.#byKey.get(idOrKey) ?? this.#byId.get(idOrKey);
  }

  /** Every configured app. */
  all(): App[] {
    return [...this.#byKey.values()];
  }
}
