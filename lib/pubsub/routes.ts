/**
 * Backend HTTP routes of channels (docs/channels.md "HTTP API"): trigger, push (batch),
 * history, channel list, one channel, presence users. Credentials via `appCredentials`.
 */
import { type Context, Hono } from "hono";
import { appCredentials, type AppEnv } from "../http/credentials.ts";
import type { App, AppRegistry } from "../config/apps.ts";
import { ApiError, readJsonBody } from "../http/errors.ts";
import {
  channelKind,
  channelNameChars,
  eventNameProblem,
  jsonBytes,
  MAX_BACKEND_DATA_BYTES,
  MAX_PUSH_EVENTS,
  validChannelName,
} from "./names.ts";
import { capMembers, channelNameOver, eventNameOver, refused } from "./app_limits.ts";
import type { ChannelService, StoredEvent } from "./service.ts";
import { Topic } from "../wire/topic.ts";

/** Default and largest history page. */
export const HISTORY_DEFAULT_LIMIT = 100;
export const HISTORY_MAX_LIMIT = 1000;

type Ctx = Context<AppEnv>;
/** A validated backend event, or the HTTP error it deserves. */
type Checked = { channel: string; event: StoredEvent } | { status: 413 | 422; detail: string };

/** Builds the channel routes. */
export function pubsubRoutes(apps: AppRegistry, svc: ChannelService): Hono {
  const r = new Hono<AppEnv>();
  // Inline per route (not `use` on a pattern) so other products' routes are untouched.
  const auth = appCredentials(apps);

  r.post("/api/apps/:app_id/trigger", auth, async (c) => {
    const body = await readJsonBody(c);
    if (!body.ok || !isObject(body.body)) throw new ApiError(400, "body must be a JSON object");
    const app = c.get("app");
    const checked = checkEvent(app, body.body, "");
    if ("status" in checked) throw invalid(checked);
    if (!svc.backendLimiter.take(app.id, app.max_backend_events_per_sec)) throw tooMany(app);
    const [serial] = await svc.publish(app, checked.channel, [checked.event]);
    return c.json({ serial });
  });

  r.post("/api/apps/:app_id/push", auth, async (c) => {
    const body = await readJsonBody(c);
    const events = body.ok && isObject(body.body) ? body.body.events : undefined;
    if (!Array.isArray(events)) throw new ApiError(400, "body must be { events: [...] }");
    const app = c.get("app");
    // The app's max_event_batch_size when the apps file sets it, else the native API's own.
    const maxEvents = app.limits?.max_event_batch_size ?? MAX_PUSH_EVENTS;
    if (events.length === 0 || events.length > maxEvents) {
      if (events.length > 0) refused(app, "max_event_batch_size");
      throw new ApiError(422, `events must hold 1 to ${maxEvents} events`, {
        source: { pointer: "/events" },
      });
    }
    const byChannel = new Map<string, { index: number; event: StoredEvent }[]>();
    for (const [index, raw] of events.entries()) {
      const checked = isObject(raw)
        ? checkEvent(app, raw, `/events/${index}`)
        : { status: 422 as const, detail: `/events/${index} must be an object` };
      if ("status" in checked) throw invalid(checked);
      const list = byChannel.get(checked.channel) ?? [];
      list.push({ index, event: checked.event });
      byChannel.set(checked.channel, list);
    }
    if (!svc.backendLimiter.take(app.id, app.max_backend_events_per_sec, events.length)) {
      throw tooMany(app);
    }
    const serials: (number | null)[] = new Array(events.length);
    await Promise.all([...byChannel].map(async ([channel, list]) => {
      const got = await svc.publish(app, channel, list.map((l) => l.event));
      list.forEach((l, i) => (serials[l.index] = got[i]));
    }));
    return c.json({ serials });
  });

  r.get("/api/apps/:app_id/channels", auth, (c) => {
    const app = c.get("app");
    const prefix = c.req.query("filter_by_prefix") ?? "";
    const info = new Set((c.req.query("info") ?? "").split(",").filter(Boolean));
    const channels: Record<string, Record<string, number>> = {};
    for (const topic of svc.occupancy.topics(app.key, prefix).sort(Topic.order)) {
      const name = topic.name;
      const entry: Record<string, number> = {};
      if (info.has("subscription_count")) entry.subscription_count = svc.occupancy.count(topic);
      if (info.has("user_count") && channelKind(name) === "presence") {
        entry.user_count = svc.presence.count(topic);
      }
      channels[name] = entry;
    }
    return c.json({ channels });
  });

  r.get("/api/apps/:app_id/channels/:channel", auth, (c) => {
    const app = c.get("app");
    const name = c.req.param("channel");
    if (!validChannelName(name)) throw badName();
    const topic = svc.topic(app, name);
    const count = svc.occupancy.count(topic);
    const out: Record<string, unknown> = {
      occupied: count > 0,
      subscription_count: count,
      serial: channelKind(name) === "ephemeral" ? null : svc.serial(app, name),
    };
    if (channelKind(name) === "presence") out.user_count = svc.presence.count(topic);
    return c.json(out);
  });

  r.get("/api/apps/:app_id/channels/:channel/history", auth, (c) => {
    const name = c.req.param("channel");
    if (!validChannelName(name)) throw badName();
    const after = intParam(c.req.query("after"), 0);
    const limit = intParam(c.req.query("limit"), HISTORY_DEFAULT_LIMIT);
    if (after === null) {
      throw new ApiError(422, "after must be a non-negative integer", {
        source: { parameter: "after" },
      });
    }
    if (limit === null || limit < 1 || limit > HISTORY_MAX_LIMIT) {
      throw new ApiError(422, `limit must be an integer from 1 to ${HISTORY_MAX_LIMIT}`, {
        source: { parameter: "limit" },
      });
    }
    return c.json(svc.history(c.get("app"), name, after, limit));
  });

  r.get("/api/apps/:app_id/channels/:channel/users", auth, (c) => {
    const name = c.req.param("channel");
    if (!validChannelName(name)) throw badName();
    if (channelKind(name) !== "presence") {
      throw new ApiError(422, "users are only listed for presence- channels");
    }
    const app = c.get("app");
    const users = capMembers(app, svc.presence.members(svc.topic(app, name)));
    return c.json({ users, count: users.length });
  });

  return r as unknown as Hono;
}

/** One backend event, validated against the app's limits (docs/limits.md). */
function checkEvent(app: App, body: Record<string, unknown>, at: string): Checked {
  if (!channelNameChars(body.channel)) {
    return {
      status: 422,
      detail: `${at}/channel must be 1-164 characters of A-Z a-z 0-9 _ - = @ , . ; :`,
    };
  }
  const nameMax = channelNameOver(app, body.channel);
  if (nameMax !== null) {
    return {
      status: 422,
      detail: `${at}/channel is longer than ${nameMax} characters (max_channel_name_length)`,
    };
  }
  const eventMax = eventNameOver(app, body.event);
  if (eventMax !== null) {
    return {
      status: 422,
      detail: `${at}/event: event name longer than ${eventMax} characters`,
    };
  }
  const problem = eventNameProblem(body.event);
  if (problem) return { status: 422, detail: `${at}/event: ${problem}` };
  const data = body.data === undefined ? null : body.data;
  // The app's max_event_payload_bytes when the apps file sets it, else the native API's own.
  const maxData = app.limits?.max_event_payload_bytes ?? MAX_BACKEND_DATA_BYTES;
  if (jsonBytes(data) > maxData) {
    refused(app, "max_event_payload_bytes");
    return { status: 413, detail: `${at}/data is larger than ${maxData} bytes` };
  }
  return { channel: body.channel, event: { event: body.event as string, data } };
}

function invalid(e: { status: 413 | 422; detail: string }): ApiError {
  return new ApiError(e.status, e.detail);
}

function tooMany(app: App): ApiError {
  return new ApiError(429, `over max_backend_events_per_sec (${app.max_backend_events_per_sec})`);
}

function badName(): ApiError {
  return new ApiError(422, "invalid channel name", { source: { parameter: "channel" } });
}

function intParam(raw: string | undefined, fallback: number): number | null {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
