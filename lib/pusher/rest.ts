/**
 * The Pusher REST API under `/apps/{app_id}/` (docs/pusher.md "REST API"), as the Pusher server
 * libraries call it: signed query authentication, Pusher's limits, plain-text 4xx bodies
 * (refusals throw `ApiError`; the PUSHER surface, lib/http/surfaces.ts, words them). Events go
 * through the same channel service as Switchboard's own HTTP API.
 */
import { type Context, Hono } from "hono";
import type { App, AppRegistry } from "../config/apps.ts";
import { ApiError } from "../http/errors.ts";
import { appLimit, byteLength } from "../limits.ts";
import {
  channelKind,
  channelNameChars,
  eventNameProblem,
  validChannelName,
} from "../pubsub/names.ts";
import {
  capMembers,
  channelNameOver,
  eventNameOver,
  payloadOver,
  refused,
} from "../pubsub/app_limits.ts";
import type { ChannelService, StoredEvent } from "../pubsub/service.ts";
import { requestProblem } from "./signature.ts";
import { jsonProblem } from "../wire/codec.ts";
import { SERVER_TO_USER } from "./wire.ts";
import { Topic } from "../wire/topic.ts";

/** What the REST API needs of the Pusher sockets: users signed in with `pusher:signin`. */
export interface PusherUsers {
  /** Closes every Pusher socket of `userId` (signed in) in `app`; returns how many. */
  terminate(app: App, userId: string): number;
  /** Delivers an event to every socket signed in as `userId` (`#server-to-user-{id}`). */
  sendToUser(app: App, userId: string, event: string, data: string): void;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether `path` is under the Pusher REST API (its errors are plain text, Pusher's way). */
export function isPusherRestPath(path: string): boolean {
  return path.startsWith("/apps/");
}

/** One validated event for one channel. */
interface Outgoing {
  channel: string;
  event: StoredEvent;
  socketId?: string;
  info: Set<string>;
}

type Ctx = Context<{ Variables: { app: App; body: string } }>;

/** Builds the Pusher REST routes. */
export function pusherRoutes(apps: AppRegistry, svc: ChannelService, users: PusherUsers): Hono {
  const r = new Hono<{ Variables: { app: App; body: string } }>();

  // Every route: the app by id, then the signature over method, path, query and body.
  r.use("/apps/:app_id/*", async (c, next) => {
    const app = apps.byId(c.req.param("app_id"));
    if (!app) throw new ApiError(404, "Unknown app");
    // body_md5 covers the raw bytes; only a body that passed it is decoded (UTF-8, strictly).
    const raw = c.req.method === "GET"
      ? new Uint8Array()
      : new Uint8Array(await c.req.arrayBuffer());
    const url = new URL(c.req.url);
    const problem = requestProblem(app, c.req.method, url.pathname, url.searchParams, raw);
    if (problem) throw new ApiError(401, problem);
    if (app.enabled === false) throw new ApiError(403, "App is disabled");
    let body: string;
    try {
      body = UTF8.decode(raw);
    } catch {
      throw new ApiError(400, "Invalid body: not UTF-8 text");
    }
    c.set("app", app);
    c.set("body", body);
    await next();
  });

  r.post("/apps/:app_id/events", async (c) => {
    const body = jsonBody(c);
    const channels = body.channels ?? (body.channel === undefined ? undefined : [body.channel]);
    if (!Array.isArray(channels) || channels.length === 0) {
      throw new ApiError(400, "Missing channels: give channels (an array) or channel");
    }
    const app = c.get("app");
    const maxChannels = appLimit(app, "max_event_channels");
    if (channels.length > maxChannels) {
      refused(app, "max_event_channels");
      throw new ApiError(400, `Too many channels: at most ${maxChannels} (max_event_channels)`);
    }
    const out = channels.map((channel) => checkEvent(app, { ...body, channel }));
    const info = await publish(c, svc, users, out);
    return c.json(
      body.info ? { channels: Object.fromEntries(out.map((o, i) => [o.channel, info[i]])) } : {},
    );
  });

  r.post("/apps/:app_id/batch_events", async (c) => {
    const batch = jsonBody(c).batch;
    if (!Array.isArray(batch) || batch.length === 0) {
      throw new ApiError(400, "Missing batch: an array of events");
    }
    const app = c.get("app");
    const maxBatch = appLimit(app, "max_event_batch_size");
    if (batch.length > maxBatch) {
      refused(app, "max_event_batch_size");
      throw new ApiError(400, `Batch too large: at most ${maxBatch} events (max_event_batch_size)`);
    }
    const out = batch.map((e, i) => {
      if (!isObject(e)) {
        throw new ApiError(
          400,
          `Invalid batch item ${i}: expected an object { channel, name, data }, got ${
            e === null ? "null" : Array.isArray(e) ? "an array" : typeof e
          }`,
        );
      }
      return checkEvent(app, e);
    });
    const info = await publish(c, svc, users, out);
    return c.json(out.some((o) => o.info.size > 0) ? { batch: info } : {});
  });

  r.get("/apps/:app_id/channels", (c) => {
    const app = c.get("app");
    const prefix = c.req.query("filter_by_prefix") ?? "";
    const info = infoOf(c.req.query("info"));
    if (info.has("user_count") && !prefix.startsWith("presence-")) {
      throw new ApiError(400, "info=user_count needs filter_by_prefix=presence-");
    }
    const channels: Record<string, Record<string, number>> = {};
    for (const topic of svc.occupancy.topics(app.key, prefix).sort(Topic.order)) {
      const name = topic.name;
      channels[name] = info.has("user_count") ? { user_count: svc.presence.count(topic) } : {};
    }
    return c.json({ channels });
  });

  r.get("/apps/:app_id/channels/:channel", (c) => {
    const app = c.get("app");
    const name = channelParam(c);
    const info = infoOf(c.req.query("info"));
    if (info.has("user_count") && channelKind(name) !== "presence") {
      throw new ApiError(400, "info=user_count is only for presence channels");
    }
    const topic = svc.topic(app, name);
    const count = svc.occupancy.count(topic);
    const out: Record<string, unknown> = { occupied: count > 0 };
    if (info.has("subscription_count")) out.subscription_count = count;
    if (info.has("user_count")) out.user_count = svc.presence.count(topic);
    // Switchboard extension: the channel's current serial (null for ephemeral channels).
    out.serial = channelKind(name) === "ephemeral" ? null : svc.serial(app, name);
    return c.json(out);
  });

  r.get("/apps/:app_id/channels/:channel/users", (c) => {
    const name = channelParam(c);
    if (channelKind(name) !== "presence") {
      throw new ApiError(400, "Users are only listed for presence channels");
    }
    const app = c.get("app");
    const members = capMembers(app, svc.presence.members(svc.topic(app, name)));
    return c.json({ users: members.map((m) => ({ id: m.user_id })) });
  });

  r.post("/apps/:app_id/users/:user_id/terminate_connections", (c) => {
    users.terminate(c.get("app"), c.req.param("user_id"));
    return c.json({});
  });

  return r as unknown as Hono;
}

/** Validates one event for one channel (Pusher's names and the app's limits). */
function checkEvent(app: App, e: Record<string, unknown>): Outgoing {
  const channel = e.channel;
  if (
    typeof channel !== "string" ||
    (!channel.startsWith(SERVER_TO_USER) && !channelNameChars(channel))
  ) {
    throw new ApiError(
      400,
      `Invalid channel name ${
        JSON.stringify(String(channel).slice(0, 200))
      }: characters of A-Z a-z 0-9 _ - = @ , . ; :`,
    );
  }
  if (!channel.startsWith(SERVER_TO_USER)) {
    const nameMax = channelNameOver(app, channel);
    if (nameMax !== null) {
      throw new ApiError(
        400,
        `Channel name too long: at most ${nameMax} characters (max_channel_name_length)`,
      );
    }
  }
  const nameMax = eventNameOver(app, e.name);
  if (nameMax !== null) {
    throw new ApiError(
      400,
      `Event name too long: at most ${nameMax} characters (max_event_name_length)`,
    );
  }
  const problem = eventNameProblem(e.name);
  if (problem) throw new ApiError(400, `Invalid event name: ${problem}`);
  if (typeof e.data !== "string") {
    throw new ApiError(400, "data must be a string (JSON-encode objects)");
  }
  const payloadMax = payloadOver(app, byteLength(e.data));
  if (payloadMax !== null) {
    throw new ApiError(
      413,
      `Payload too large: data is limited to ${payloadMax} bytes (max_event_payload_bytes)`,
    );
  }
  if (
    e.socket_id !== undefined &&
    (typeof e.socket_id !== "string" || !/^\d+\.\d+$/.test(e.socket_id))
  ) {
    throw new ApiError(400, "Invalid socket_id");
  }
  const data = parseData(e.data);
  // Stored as MessagePack: only values JSON carries, and no key named __proto__.
  const invalid = jsonProblem(data, 0);
  if (invalid) throw new ApiError(400, `Invalid data: ${invalid}`);
  return {
    channel,
    event: { event: e.name as string, data },
    socketId: e.socket_id as string | undefined,
    info: infoOf(e.info),
  };
}

/**
 * Publishes validated events (rate cap first, all or nothing), each channel's events in one
 * append; resolves with the info asked for each event.
 */
async function publish(c: Ctx, svc: ChannelService, users: PusherUsers, out: Outgoing[]) {
  const app = c.get("app");
  if (!svc.backendLimiter.take(app.id, app.max_backend_events_per_sec, out.length)) {
    throw new ApiError(
      429,
      `Over the app's max_backend_events_per_sec (${app.max_backend_events_per_sec})`,
    );
  }
  for (const o of out) {
    if (o.channel.startsWith(SERVER_TO_USER)) {
      const data = typeof o.event.data === "string" ? o.event.data : JSON.stringify(o.event.data);
      users.sendToUser(app, o.channel.slice(SERVER_TO_USER.length), o.event.event, data);
    } else {
      await svc.publish(app, o.channel, [o.event], o.socketId);
    }
  }
  return out.map((o) => {
    const topic = svc.topic(app, o.channel);
    const info: Record<string, number> = {};
    if (o.info.has("subscription_count")) info.subscription_count = svc.occupancy.count(topic);
    if (o.info.has("user_count") && channelKind(o.channel) === "presence") {
      info.user_count = svc.presence.count(topic);
    }
    return info;
  });
}

/** The request body as a JSON object (read once by the auth middleware). */
function jsonBody(c: Ctx): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(c.get("body"));
  } catch {
    throw new ApiError(400, "Malformed JSON body");
  }
  if (!isObject(body)) throw new ApiError(400, "The body must be a JSON object");
  return body;
}

/** The `:channel` path parameter, validated. */
function channelParam(c: Ctx): string {
  const name = c.req.param("channel") ?? "";
  if (!validChannelName(name)) throw new ApiError(400, "Invalid channel name");
  return name;
}

/** A comma-separated `info` parameter as a set. */
function infoOf(raw: unknown): Set<string> {
  return new Set(
    typeof raw === "string" ? raw.split(",").map((s) => s.trim()).filter(Boolean) : [],
  );
}

/** Pusher `data` as stored: the JSON value it encodes, or the string itself when it is not JSON. */
function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
