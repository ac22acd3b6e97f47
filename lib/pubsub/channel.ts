/**
 * The PubSub channel handler: join authorization by channel kind, replay after `after_serial`
 * with the join-without-gaps pattern, presence, and client publish.
 */
import type { Principal } from "../auth/principal.ts";
import type { App } from "../config/apps.ts";
import type { ChannelHandler, ChannelInstance, JoinContext, PushReply } from "../socket/handler.ts";
import { errorReply } from "../socket/handler.ts";
import {
  channelKind,
  eventNameProblem,
  jsonBytes,
  MAX_CLIENT_PAYLOAD_BYTES,
  validChannelName,
} from "./names.ts";
import { memberOf, type PresenceMember } from "./presence.ts";
import { type ChannelService, deliveryPayload, type StoredEvent } from "./service.ts";

type JoinOutcome = ChannelInstance | { error: string };

/** Builds the `pubsub` channel handler over the channel service. */
export function pubsubChannel(svc: ChannelService): ChannelHandler {
  return { join: (ctx) => join(svc, ctx) };
}

async function join(svc: ChannelService, ctx: JoinContext): Promise<JoinOutcome> {
  const name = ctx.name;
  if (!validChannelName(name)) return { error: "invalid topic format" };
  const kind = channelKind(name);
  const token = ctx.params.auth;
  let principal: Principal | null = null;
  if (token !== undefined && token !== null && token !== "") {
    principal = await ctx.verify(token);
    if (!principal) return { error: "invalid token" };
  }
  if ((kind === "private" || kind === "presence") && !principal) {
    return { error: "auth required for private/presence channels" };
  }
  const needsToken = kind === "private" || kind === "presence" ||
    ctx.app.enable_user_authentication === 1;
  if (needsToken && !principal?.can(`channel:subscribe:${name}`)) {
    return { error: `forbidden: missing channel:subscribe:${name}` };
  }
  let member: PresenceMember | undefined;
  if (kind === "presence") {
    if (!principal!.can(`channel:presence:${name}`)) {
      return { error: `forbidden: missing channel:presence:${name}` };
    }
    const data = parseChannelData(ctx.params.channel_data);
    if (!data) return { error: "invalid channel_data" };
    member = memberOf(String(data.user_id), data.user_info);
    if (principal!.clientId !== member.user_id) return { error: "invalid token" };
  }
  const after = parseAfter(ctx.params.after_serial);
  if (after === null) return { error: "invalid after_serial" };

  const instance = channelInstance(svc, ctx, principal, member);
  if (kind === "ephemeral") {
    ctx.accept({ serial: null, replay: "none" });
    ctx.subscribe();
    return instance;
  }
  // Join without gaps: snapshot head N, then replay + reply + subscribe in the turn N is published.
  const stream = svc.stream(ctx.app, name);
  const head = svc.log.head(stream);
  return await new Promise<JoinOutcome>((resolve) => {
    svc.log.whenPublished(stream, head, () => {
      const response: Record<string, unknown> = { serial: head };
      if (after !== undefined) {
        const { records, first } = svc.records(stream, after, head);
        for (const r of records) ctx.push(r.entry.event, deliveryPayload(r.position, r.entry));
        response.replay = after >= first - 1 || after >= head ? "complete" : "partial";
        response.first_serial = first;
      }
      if (member) {
        // Announce before subscribing, so the joiner itself does not get its own join event.
        if (svc.presence.add(ctx.topic, member.user_id, member.user_info, ctx.socketId)) {
          svc.hub.publish(ctx.topic, "presence:join", member);
        }
        const members = svc.presence.members(ctx.topic);
        response.presence = { members, count: members.length };
      }
      ctx.accept(response);
      ctx.subscribe();
      resolve(instance);
    });
  });
}

function channelInstance(
  svc: ChannelService,
  ctx: JoinContext,
  principal: Principal | null,
  member: PresenceMember | undefined,
): ChannelInstance {
  const app = ctx.app;
  return {
    handleIn: (event, payload) => clientPublish(svc, app, ctx, principal, event, payload),
    terminate: () => {
      if (!member) return;
      // The member is already unsubscribed here, so the leave goes to the others only.
      if (svc.presence.remove(ctx.topic, member.user_id, ctx.socketId)) {
        svc.hub.publish(ctx.topic, "presence:leave", member);
      }
    },
  };
}

async function clientPublish(
  svc: ChannelService,
  app: App,
  ctx: JoinContext,
  principal: Principal | null,
  event: string,
  payload: unknown,
): Promise<PushReply> {
  if (!app.enable_client_messages) return errorReply("Client messages are disabled");
  if (!principal?.can(`channel:publish:${ctx.name}`)) {
    return errorReply("Channel mode does not permit publishing");
  }
  const problem = eventNameProblem(event);
  if (problem) return errorReply(`Validation failed: ${problem}`);
  if (jsonBytes(payload) > MAX_CLIENT_PAYLOAD_BYTES) {
    return errorReply(`Validation failed: payload larger than ${MAX_CLIENT_PAYLOAD_BYTES} bytes`);
  }
  if (!svc.clientLimiter.take(app.id, app.max_client_events_per_sec)) {
    return errorReply("Rate limit exceeded");
  }
  const stored: StoredEvent = { event, data: payload ?? null, socket_id: ctx.socketId };
  if (principal.clientId !== undefined) stored.client_id = principal.clientId;
  const [serial] = await svc.publish(app, ctx.name, [stored]);
  return { status: "ok", response: { serial } };
}

/** `channel_data` as a JSON string or object with a `user_id`; null when unusable. */
function parseChannelData(raw: unknown): { user_id: unknown; user_info?: unknown } | null {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  if (typeof value !== "object" || value === null) return null;
  const v = value as { user_id?: unknown; user_info?: unknown };
  if (v.user_id === undefined || v.user_id === null || v.user_id === "") return null;
  if (typeof v.user_id !== "string" && typeof v.user_id !== "number") return null;
  return { user_id: v.user_id, user_info: v.user_info };
}

/** `after_serial`: undefined when absent, a non-negative integer, or null when malformed. */
function parseAfter(raw: unknown): number | undefined | null {
  if (raw === undefined || raw === null || raw === "") return undefined;
  const n = typeof raw === "string" ? Number(raw) : raw;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : null;
}
