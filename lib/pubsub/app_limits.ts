/**
 * The per-app limits (docs/limits.md "Per-app limits") as both protocols and both HTTP APIs
 * apply them: the checks, the presence member cap (joins in progress hold their place, so
 * concurrent joins cannot pass it together), and the refusal counter of `/metrics`.
 */
import type { App } from "../config/apps.ts";
import { appLimit, type AppLimitName } from "../limits.ts";
import { record } from "../metrics/mod.ts";
import type { Topic } from "../wire/topic.ts";
import type { ChannelService } from "./service.ts";

/** Counts one refusal of `app` over `limit` (`switchboard_limit_refusals_total`). */
export function refused(app: App, limit: AppLimitName): void {
  record.limit(app.id, limit);
}

/** The app's `max_channel_name_length` when `name` is longer, else null (counted as refused). */
export function channelNameOver(app: App, name: string): number | null {
  const max = appLimit(app, "max_channel_name_length");
  if (name.length <= max) return null;
  refused(app, "max_channel_name_length");
  return max;
}

/** The app's `max_event_name_length` when `event` (a string) is longer, else null (counted). */
export function eventNameOver(app: App, event: unknown): number | null {
  const max = appLimit(app, "max_event_name_length");
  if (typeof event !== "string" || event.length <= max) return null;
  refused(app, "max_event_name_length");
  return max;
}

/** The app's `max_event_payload_bytes` when `bytes` is more, else null (counted as refused). */
export function payloadOver(app: App, bytes: number): number | null {
  const max = appLimit(app, "max_event_payload_bytes");
  if (bytes <= max) return null;
  refused(app, "max_event_payload_bytes");
  return max;
}

/** Joins in progress per channel service: topic key -> user id -> joins. */
const joining = new WeakMap<ChannelService, Map<string, Map<string, number>>>();

/**
 * Admits `userId` to the presence channel `topic` under the app's
 * `max_presence_members_per_channel`: a user already a member (or joining) always is; another
 * only while members and users joining are fewer than the cap. Returns the function that ends
 * the admission once the join has ended (entered or not), or the cap when refused (counted).
 */
export function admitMember(
  svc: ChannelService,
  app: App,
  topic: Topic,
  userId: string,
): (() => void) | { max: number } {
  const max = appLimit(app, "max_presence_members_per_channel");
  let byTopic = joining.get(svc);
  if (!byTopic) joining.set(svc, byTopic = new Map());
  const waiting = byTopic.get(topic.key) ?? new Map<string, number>();
  if (!svc.presence.has(topic, userId) && !waiting.has(userId)) {
    let newcomers = 0;
    for (const u of waiting.keys()) if (!svc.presence.has(topic, u)) newcomers++;
    if (svc.presence.count(topic) + newcomers >= max) {
      refused(app, "max_presence_members_per_channel");
      return { max };
    }
  }
  waiting.set(userId, (waiting.get(userId) ?? 0) + 1);
  byTopic.set(topic.key, waiting);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const n = (waiting.get(userId) ?? 1) - 1;
    if (n > 0) return void waiting.set(userId, n);
    waiting.delete(userId);
    if (waiting.size === 0 && byTopic.get(topic.key) === waiting) byTopic.delete(topic.key);
  };
}

/** At most the app's `max_presence_members_per_channel` of `members` (what a presence list
 * shows: the REST `users` routes, `subscription_succeeded`). */
export function capMembers<T>(app: App, members: T[]): T[] {
  const max = appLimit(app, "max_presence_members_per_channel");
  return members.length > max ? members.slice(0, max) : members;
}
