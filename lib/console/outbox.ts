/**
 * The console's view of the channel-webhook outbox: the small interface the console needs
 * (`OutboxView`) and the thin adapter over today's outbox (lib/webhooks/outbox.ts used by
 * lib/pusher/webhooks.ts). The adapter depends on exactly this: the LMDB database
 * `pusher:outbox`, delivery rows keyed `["o", seq]` (other key shapes there are not
 * deliveries), values carrying `appId`, `url`, `attempt`, `dueAt` and the JSON `body` whose
 * `time_ms` is when the delivery was staged; and `wake()` to have the sender take the due
 * times from storage again. Should the outbox's layout change, only `pusherOutboxView` changes.
 */
import type { Table } from "../store/table.ts";
import type { App } from "../config/apps.ts";
import type { Storage } from "../store/storage.ts";

/** Pending deliveries to one URL of an app. */
export interface UrlBacklog {
  url: string;
  pending: number;
  /** Age (ms) of the oldest pending delivery, null when none. */
  oldestAgeMs: number | null;
  /** Most attempts made by a pending delivery so far. */
  maxAttempt: number;
  /** When the next attempt is due (unix ms), null when none. */
  nextDueAt: number | null;
}

/** What the console reads from, and asks of, a webhook outbox. */
export interface OutboxView {
  /** The app's pending deliveries by URL. */
  backlog(app: App): UrlBacklog[];
  /** Makes every pending delivery of the app (of `url` only, when given) due now; resolves
   * with how many were moved, once durable. */
  retryNow(app: App, url?: string): Promise<number>;
}

/** Most outbox rows one console read walks. */
const SCAN_LIMIT = 50_000;

interface Row {
  appId?: string;
  url?: string;
  attempt?: number;
  dueAt?: number;
  body?: string;
  id?: string;
}

/** The adapter over the `pusher:outbox` database (see the module comment). */
export function pusherOutboxView(env: Storage, wake: () => void): OutboxView {
  const db: Table<Row> = env.db<Row>("pusher:outbox");
  const rows = function* (app: App) {
    for (const { key, value } of db.getRange({ start: ["o"], end: ["p"], limit: SCAN_LIMIT })) {
      if (value?.appId === app.id) yield { key, value, dueAt: value.dueAt ?? 0 };
    }
  };
  return {
    backlog(app) {
      const now = Date.now();
      const out = new Map<string, UrlBacklog>();
      for (const { value, dueAt } of rows(app)) {
        const url = String(value.url);
        let b = out.get(url);
        if (!b) {
          out.set(url, b = { url, pending: 0, oldestAgeMs: null, maxAttempt: 0, nextDueAt: null });
        }
        b.pending++;
        b.maxAttempt = Math.max(b.maxAttempt, value.attempt ?? 0);
        b.nextDueAt = b.nextDueAt === null ? dueAt : Math.min(b.nextDueAt, dueAt);
        const staged = stagedAt(value.body);
        if (staged !== undefined) b.oldestAgeMs = Math.max(b.oldestAgeMs ?? 0, now - staged);
      }
      return [...out.values()];
    },
    async retryNow(app, url) {
      const now = Date.now();
      let moved = 0;
      await env.transaction(() => {
        for (const { key, value, dueAt } of [...rows(app)]) {
          if (url !== undefined && value.url !== url) continue;
          if (dueAt <= now) continue;
          db.put(key, { ...value, dueAt: now });
          moved++;
        }
      });
      wake();
      return moved;
    },
  };
}

/** `time_ms` of a stored body (when it was staged), if readable. */
function stagedAt(body: string | undefined): number | undefined {
  const m = body ? /"time_ms":(\d+)/.exec(body.slice(0, 64)) : null;
  return m ? Number(m[1]) : undefined;
}
