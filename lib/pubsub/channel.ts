/**
 * The PubSub channel handler: join authorization by channel kind, replay after `after_serial`
 * with the join-without-gaps pattern, presence, and client publish.
 */
import type { Principal } from "../auth/principal.ts";
import { verifyJoin } from "../auth/join.ts";
import { appLimit, idProblem } from "../limits.ts";
import type { App } from "../config/apps.ts";
import type { ChannelHandler, ChannelInstance, JoinContext, PushReply } from "../socket/handler.ts";
import { errorReply } from "../socket/handler.ts";
import { channelKind, channelNameChars, eventNameProblem, jsonBytes } from "./names.ts";
import { admitMember, channelNameOver, eventNameOver, payloadOver, refused } from "./app_limits.ts";
import { memberOf, type PresenceMember } from "./presence.ts";
import { type ChannelService, deliveryPayload, type StoredEvent } from "./service.ts";
import { isRefusal, type StreamPosition, type Topic } from "../streams/mod.ts";

type JoinOutcome = ChannelInstance | { error: string };

/** Builds the `pubsub` channel handler over the channel service. */
export function pubsubChannel(svc: ChannelService): ChannelHandler {
  return { join: (ctx) => join(svc, ctx) };
}

async function join(svc: ChannelService, ctx: JoinContext): Promise<JoinOutcome> {
  const name = ctx.topic.name;
  if (!channelNameChars(name)) return { error: "invalid topic format" };
  const nameMax = channelNameOver(ctx.app, name);
  if (nameMax !== null) {
    return { error: `limit reached: channel name longer than ${nameMax} characters` };
  }
  const kind = channelKind(name);
  const cred = await verifyJoin(ctx);
  if ("error" in cred) return cred;
  const principal: Principal | null = cred.kind === "token" ? cred.principal : null;
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
    const checked = presenceMember(ctx.params.channel_data, ctx.app);
    if ("error" in checked) return { error: checked.error };
    member = checked;
    if (principal!.clientId !== member.user_id) return { error: "invalid token" };
  }
  const from = svc.streams.position(ctx.params);
  if (isRefusal(from)) return from;

  let release = () => {};
  if (member) {
    const admitted = admitMember(svc, ctx.app, ctx.topic, member.user_id);
    if (typeof admitted !== "function") {
      return { error: `limit reached: presence channel has ${admitted.max} members` };
    }
    release = admitted;
  }
  const instance = channelInstance(svc, ctx, principal, member);
  const entered = await enterChannel(svc, ctx, { member, from }).finally(release);
  return entered ? instance : { error: "join ended" };
}

/**
 * The member of a presence join from its `channel_data` (a JSON string or object with a
 * `user_id` and optional `user_info`), or the join error reason (`limit` when `user_info` is
 * over the app's `max_presence_member_bytes`; counted as refused).
 */
export function presenceMember(
  raw: unknown,
  app: App,
): PresenceMember | { error: string; limit?: number } {
  const data = parseChannelData(raw);
  if (!data) return { error: "invalid channel_data" };
  // A number past 2^53 has already lost digits (two users would merge; 1e400 is Infinity).
  if (typeof data.user_id === "number" && !Number.isSafeInteger(data.user_id)) {
    return {
      error:
        "invalid channel_data: user_id is a number that is not a safe integer (beyond 2^53 - 1 or fractional): send it as a string",
    };
  }
  const maxInfo = appLimit(app, "max_presence_member_bytes");
  if (jsonBytes(data.user_info) > maxInfo) {
    refused(app, "max_presence_member_bytes");
    return {
      error: `invalid channel_data: user_info larger than ${maxInfo} bytes`,
      limit: maxInfo,
    };
  }
  const problem = idProblem("user_id", String(data.user_id));
  if (problem) return { error: `invalid channel_data: ${problem}` };
  return memberOf(String(data.user_id), data.user_info);
}

/**
 * An authorized join, whichever protocol asked: replay after `from` (oldest first), the
 * reply with the snapshot `{ serial, epoch }` (plus `replay`/`first_serial` when a position was
 * given, and `presence` for a member), then live delivery, with nothing dropped or repeated.
 * A presence member is announced to the others before it subscribes. Resolves false when the
 * join ended before it completed.
 */
export async function enterChannel(
  svc: ChannelService,
  ctx: JoinContext,
  opts: { member?: PresenceMember; from?: StreamPosition },
): Promise<boolean> {
  // The join waits until what it makes observable is reported (webhooks, ChannelService.onEnter),
  // a cache miss included: it is reported before the join when nothing is cached now.
  const missReported = await reportCacheMiss(svc, ctx, opts.from);
  const entered = await svc.beforeEnter(ctx.app, ctx.topic, opts.member?.user_id);
  return await joinChannel(svc, ctx, { ...opts, missReported }).finally(entered);
}

/**
 * Reports the cache miss of a fresh join of a cache channel that has nothing cached, and
 * waits until it is stored; true when it did. (An event published meanwhile makes the join a
 * hit after all: the report stands, as the miss was real when the client subscribed.)
 */
async function reportCacheMiss(
  svc: ChannelService,
  ctx: JoinContext,
  from: StreamPosition | undefined,
): Promise<boolean> {
  if (from !== undefined || !svc.isCache(ctx.topic.name)) return false;
  const { stream } = svc.address(ctx.app, ctx.topic.name);
  if (svc.cached(stream, svc.log.head(stream))) return false;
  await svc.cacheMiss(ctx.app, ctx.topic.name);
  return true;
}

/** The join of `enterChannel` itself. */
async function joinChannel(
  svc: ChannelService,
  ctx: JoinContext,
  opts: { member?: PresenceMember; from?: StreamPosition; missReported: boolean },
): Promise<boolean> {
  const { member, from, missReported } = opts;
  if (channelKind(ctx.topic.name) === "ephemeral") {
    ctx.accept({ serial: null, replay: "none" });
    ctx.subscribe();
    return true;
  }
  const addr = svc.address(ctx.app, ctx.topic.name);
  return await svc.streams.join(ctx, addr, {
    from,
    // Replay honours the retention window (count and age), even before a lazy trim ran.
    read: (from, upTo, limit) => svc.records(addr.stream, from, upTo, limit),
    snapshot: () => {
      const serial = svc.log.head(addr.stream);
      return { position: serial, value: { serial } };
    },
    reply: (snap) => {
      const response: Record<string, unknown> = { ...snap };
      if (member) {
        // Added before subscribing, so the joiner itself does not get its own join event (the
        // registry's observer tells the others: `ChannelService`).
        svc.presence.add(
          ctx.topic,
          member.user_id,
          member.user_info,
          svc.presence.node,
          ctx.socketId,
        );
        const members = svc.presence.members(ctx.topic);
        response.presence = { members, count: members.length };
      }
      if (svc.isCache(ctx.topic.name)) {
        // The cache at the snapshot: live delivery starts right after it, so nothing is lost
        // or repeated between the cached event and the next one.
        const hit = svc.cached(addr.stream, snap.serial);
        response.cache = hit
          ? { event: hit.event, payload: deliveryPayload(hit.serial, hit) }
          : null;
        // Missed only now (the cached event expired since): reported without holding the join.
        if (!hit && from === undefined && !missReported) {
          void svc.cacheMiss(ctx.app, ctx.topic.name).catch(() => {});
        }
      }
      return response;
    },
  });
}

/** Ends a presence member's socket on `topic`; the others hear `presence:leave` if it was its
 * last presence anywhere. */
export function leavePresence(
  svc: ChannelService,
  topic: Topic,
  member: PresenceMember,
  socketId: string,
): void {
  // The member is already unsubscribed here, so the leave goes to the others only.
  svc.presence.remove(topic, member.user_id, svc.presence.node, socketId);
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
      if (member) leavePresence(svc, ctx.topic, member, ctx.socketId);
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
  if (!principal?.can(`channel:publish:${ctx.topic.name}`)) {
    return errorReply("Channel mode does not permit publishing");
  }
  const nameMax = eventNameOver(app, event);
  if (nameMax !== null) {
    return errorReply(`Validation failed: event name longer than ${nameMax} characters`);
  }
  const problem = eventNameProblem(event);
  if (problem) return errorReply(`Validation failed: ${problem}`);
  const payloadMax = payloadOver(app, jsonBytes(payload));
  if (payloadMax !== null) {
    return errorReply(`Validation failed: payload larger than ${payloadMax} bytes`);
  }
  if (!svc.clientLimiter.take(app.id, app.max_client_events_per_sec)) {
    return errorReply("Rate limit exceeded");
  }
  const stored: StoredEvent = { event, data: payload ?? null, socket_id: ctx.socketId };
  if (principal.clientId !== undefined) stored.client_id = principal.clientId;
  const serial = await svc.publishClient(app, ctx.topic.name, stored);
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
