/**
 * Pusher protocol 7 messages: `{ event, channel?, data }` JSON text frames whose `data` is
 * itself a JSON string on the way out. Hub broadcasts of the channels product (Phoenix frames
 * `[null, null, "pubsub:KEY:NAME", event, { serial, data, client_id? }]`, with the topic parsed)
 * are re-encoded here once per broadcast for every Pusher subscriber; the serial rides along as an extra
 * top-level `serial` field, which Pusher clients ignore.
 */
import type { Frame } from "../wire/codec.ts";
import { Topic } from "../wire/topic.ts";

/** The hub format name of Pusher subscribers. */
export const PUSHER_FORMAT = "pusher";

/** Hub topic product of `#server-to-user-{id}` deliveries (users signed in with `pusher:signin`). */
const USER_TOPIC = "pusher-user";
/** The channel name Pusher clients use for server-to-user events. */
export const SERVER_TO_USER = "#server-to-user-";

/** Hub topic of the server-to-user channel of `userId` in the app with key `appKey`. */
export function userTopic(appKey: string, userId: string): Topic {
  return Topic.of(USER_TOPIC, appKey, userId);
}

/** `data` as Pusher carries it: strings as they are, anything else as JSON. */
export function pusherData(data: unknown): string {
  return typeof data === "string" ? data : JSON.stringify(data ?? null);
}

/** One outbound Pusher message. */
export function message(
  event: string,
  data: unknown,
  channel?: string,
  extra?: Record<string, unknown>,
): string {
  const msg: Record<string, unknown> = { event };
  if (channel !== undefined) msg.channel = channel;
  msg.data = pusherData(data);
  if (extra) Object.assign(msg, extra);
  return JSON.stringify(msg);
}

/** A `pusher:error` message; `code` null for errors that do not close the connection. */
export function errorMessage(code: number | null, text: string): string {
  // pusher:error carries its data as an object, as Pusher sends it.
  return JSON.stringify({ event: "pusher:error", data: { code, message: text } });
}

/** The Pusher channel name of a hub topic, or null for topics Pusher clients never join. */
function channelOf(topic: Topic): string | null {
  if (topic.product === "pubsub") return topic.name;
  return topic.product === USER_TOPIC ? SERVER_TO_USER + topic.name : null;
}

/**
 * The hub encoder of the Pusher format: presence joins and leaves become
 * `pusher_internal:member_added` / `member_removed`, published events keep their name and get
 * their `serial` (and, for client events, `user_id`) beside `data`.
 */
export function encodeForPusher(frame: Frame, topic: Topic): string | null {
  const [, , , event, payload] = frame;
  const channel = channelOf(topic);
  if (channel === null) return null;
  const p = payload as {
    user_id?: string;
    user_info?: unknown;
    serial?: number | null;
    data?: unknown;
    client_id?: string;
  };
  if (event === "presence:join") {
    return message(
      "pusher_internal:member_added",
      { user_id: p.user_id, user_info: p.user_info },
      channel,
    );
  }
  if (event === "presence:leave") {
    return message("pusher_internal:member_removed", { user_id: p.user_id }, channel);
  }
  const extra: Record<string, unknown> = {};
  if (typeof p.serial === "number") extra.serial = p.serial;
  if (p.client_id !== undefined) extra.user_id = p.client_id;
  return message(event, p.data, channel, extra);
}
