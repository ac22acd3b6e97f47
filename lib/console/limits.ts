/**
 * The console's view of an app's per-app limits (docs/limits.md "Per-app limits"): each limit's
 * value in force, whether the apps file sets it, and the refusals over it on this node.
 */
import type { App } from "../config/apps.ts";
import { APP_LIMIT_NAMES, appLimit } from "../limits.ts";
import { limitRefusalCounts } from "../metrics/mod.ts";

/** One row of the console's limits table. */
export interface LimitRow {
  name: string;
  value: number;
  set: boolean;
  refused: number;
}

/** Every per-app limit of `app`, in the docs' order. */
export function limitsOf(app: App): LimitRow[] {
  const refused = limitRefusalCounts(app.id);
  return APP_LIMIT_NAMES.map((name) => ({
    name,
    value: appLimit(app, name),
    set: app.limits?.[name] !== undefined,
    refused: refused[name] ?? 0,
  }));
}
