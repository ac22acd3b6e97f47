/**
 * The grammar of app ids and keys (README.md "Apps file"), checked at start-up.
 *
 * An app's id and key address it in URLs (`/apps/{id}/events`, `/api/v1/...`, `?app_key=`) and
 * are parts of its storage keys and topics. Both are 1 to 64 characters from `A-Z a-z 0-9 _ -`;
 * every id and every key is unique; and no app's id equals another app's key, since a path that
 * accepts either would otherwise resolve to two apps.
 */
import { ConfigError } from "./config.ts";

/** The characters and length of an app id or key. */
export const APP_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** The rule, as start-up errors state it. */
export const APP_ID_RULE = "1 to 64 characters from A-Z a-z 0-9 _ -";

/** The id and key of one app, as read from the apps file. */
export interface AppIdentity {
  id: string;
  key: string;
}

/**
 * Throws a ConfigError naming the app (`where: apps[i] (id "...")`) and the rule when an id or
 * key breaks the grammar, an id or key repeats, or an id equals another app's key.
 */
export function checkAppIdentities(apps: readonly AppIdentity[], where = "apps file"): void {
  /** `apps[i] (id "...")`: which app, by place and id (JSON-quoted, so control characters show). */
  const app = (i: number) => `apps[${i}] (id ${JSON.stringify(apps[i].id)})`;
  const name = (i: number) => `${where}: ${app(i)}`;
  apps.forEach((a, i) => {
    for (const field of ["id", "key"] as const) {
      if (!APP_ID_RE.test(a[field])) {
        throw new ConfigError(
          `${name(i)}: ${field} ${JSON.stringify(a[field])} is not ${APP_ID_RULE}`,
        );
      }
    }
  });
  /** Which app (index) holds each id and each key. */
  const ids = new Map<string, number>();
  const keys = new Map<string, number>();
  apps.forEach((a, i) => {
    const sameId = ids.get(a.id);
    if (sameId !== undefined) {
      throw new ConfigError(
        `${name(i)}: id ${JSON.stringify(a.id)} is also the id of ${
          app(sameId)
        }; ids must be unique`,
      );
    }
    const sameKey = keys.get(a.key);
    if (sameKey !== undefined) {
      throw new ConfigError(
        `${name(i)}: key ${JSON.stringify(a.key)} is also the key of ${
          app(sameKey)
        }; keys must be unique`,
      );
    }
    ids.set(a.id, i);
    keys.set(a.key, i);
  });
  apps.forEach((a, i) => {
    const other = keys.get(a.id);
    if (other !== undefined && other !== i) {
      throw new ConfigError(
        `${name(i)}: id ${JSON.stringify(a.id)} is the key of ${
          app(other)
        }; an app's id must not equal another app's key`,
      );
    }
  });
}
