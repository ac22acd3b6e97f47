/**
 * Backend HTTP routes of channels (docs/channels.md "HTTP API"): trigger, push (batch),
 * history, channel list, one channel, presence users. Credentials via `appCredentials`.
 */
import { type Context, Hono } from "hono";
import { type AppEnv, appCredentials } from "../auth/credentials.ts";
import type { App, AppRegistry } from "../config/apps.ts";
import { jsonApiError, readJsonBody } from "../http/errors.ts";
import {
  channelKind,
  eventNameProblem,
  jsonBytes,
  MAX_BACKEND_DATA_BYTES,
  MAX_PUSH_EVENTS,
  validChannelName,
} from "./names.ts";
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
    if (!body.ok || !isObject(body.body)) return jsonApiError(c, 400, "Bad Request", "body must be a JSON object");
    const checked = checkEvent(body.body, "");
    if ("status" in checked) return invalid(c, checked);
    const app = c.get("app");
    if (!svc.backendLimiter.take(app.id, app.max_backend_events_per_sec)) return tooMany(c, app);
    const [serial] = await svc.publish(app, checked.channel, [checked.event]);
    return c.json({ serial });
  });

  r.post("/api/apps/:app_id/push", auth, async (c) => {
    const body = await readJsonBody(c);
    const events = body.ok && isObject(body.body) ? body.body.events : undefined;
    if (!Array.isArray(events)) return jsonApiError(c, 400, "Bad Request", "body must be { events: [...] }");
    if (events.length === 0 || events.length > MAX_PUSH_EVENTS) {
      return jsonApiError(c, 422, "Unprocessable Entity", `events must hold 1 to ${MAX_PUSH_EVENTS} events`, { pointer: "/events" });
    }
    const byChannel = new Map<string, { index: number; event: StoredEvent }[]>();
    for (const [index, raw] of events.entries()) {
      const checked = isObject(raw) ? checkEvent(raw, `/events/${index}`) : { status: 422 as const, detail: `/events/${index} must be an object` };
      if ("status" in checked) return invalid(c, checked);
      const list = byChannel.get(checked.channel) ?? [];
      list.push({ index, event: checked.event });
      byChannel.set(checked.channel, list);
    }
    const app = c.get("app");
    if (!svc.backendLimiter.take(app.id, app.max_backend_events_per_sec, events.length)) return tooMany(c, app);
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
    for (const topic of svc.occupancy.topics(Topic.prefixOf("pubsub", app.key) + prefix).sort()) {
      const name = Topic.parse(topic)?.name ?? "";
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
    if (!validChannelName(name)) return badName(c);
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
    if (!validChannelName(name)) return badName(c);
    const after = intParam(c.req.query("after"), 0);
    const limit = intParam(c.req.query("limit"), HISTORY_DEFAULT_LIMIT);
    if (after === null) return jsonApiError(c, 422, "Unprocessable Entity", "after must be a non-negative integer", { parameter: "after" });
    if (limit === null || limit < 1 || limit > HISTORY_MAX_LIMIT) {
      return jsonApiError(c, 422, "Unprocessable Entity", `limit must be an integer from 1 to ${HISTORY_MAX_LIMIT}`, { parameter: "limit" });
    }
    return c.json(svc.history(c.get("app"), name, after, limit));
  });

  r.get("/api/apps/:app_id/channels/:channel/users", auth, (c) => {
    const name = c.req.param("channel");
    if (!validChannelName(name)) return badName(c);
    if (channelKind(name) !== "presence") {
      return jsonApiError(c, 422, "Unprocessable Entity", "users are only listed for presence- channels");
    }
    const users = svc.presence.members(svc.topic(c.get("app"), name));
    return c.json({ users, count: users.length });
  });

  return r as unknown as Hono;
}

function checkEvent(body: Record<string, unknown>, at: string): Checked {
  if (!validChannelName(body.channel)) {
    return { status: 422, detail: `${at}/channel must be 1-164 characters of A-Z a-z 0-9 _ - = @ , . ; :` };
  }
  const problem = eventNameProblem(body.event);
  if (problem) return { status: 422, detail: `${at}/event: ${problem}` };
  const data = body.data === undefined ? null : body.data;
  if (jsonBytes(data) > MAX_BACKEND_DATA_BYTES) {
    return { status: 413, detail: `${at}/data is larger than ${MAX_BACKEND_DATA_BYTES} bytes` };
  }
  return { channel: body.channel, event: { event: body.event as string, data } };
}

function invalid(c: Ctx, e: { status: 413 | 422; detail: string }): Response {
  return jsonApiError(c, e.status, e.status === 413 ? "Payload Too Large" : "Unprocessable Entity", e.detail);
}

function tooMany(c: Ctx, app: App): Response {
  return jsonApiError(c, 429, "Too Many Requests", `over max_backend_events_per_sec (${app.max_backend_events_per_sec})`);
}

function badName(c: Ctx): Response {
  return jsonApiError(c, 422, "Unprocessable Entity", "invalid channel name", { parameter: "channel" });
}

function intParam(raw: string | undefined, fallback: number): number | null {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
