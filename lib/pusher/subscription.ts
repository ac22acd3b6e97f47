/**
 * The checks of a `pusher:subscribe` before the channel join: the channel name, the app's name
 * limit, the channel signature and presence member of private and presence channels, and
 * sign-in first where the app requires it for the others.
 */
import type { App } from "../config/apps.ts";
import { presenceMember } from "../pubsub/channel.ts";
import { channelNameOver } from "../pubsub/app_limits.ts";
import { channelKind, channelNameChars } from "../pubsub/names.ts";
import type { PresenceMember } from "../pubsub/presence.ts";
import { validChannelAuth } from "./signature.ts";

/** A refused subscription, as `pusher:subscription_error` carries it. */
export interface SubscriptionRefusal {
  type: string;
  status: number;
  error: string;
}

/**
 * Checks the subscription of socket `socketId` (signed in or not) to channel `name` with the
 * message's `data`: its presence member (on a presence channel) when it may join, else the
 * refusal.
 */
export function checkSubscription(
  app: App,
  socketId: string,
  name: string,
  data: Record<string, unknown>,
  signedIn: boolean,
): { member?: PresenceMember } | SubscriptionRefusal {
  if (!channelNameChars(name)) {
    return refusal(
      "InvalidChannel",
      400,
      "Invalid channel name: characters of A-Z a-z 0-9 _ - = @ , . ; :",
    );
  }
  const nameMax = channelNameOver(app, name);
  if (nameMax !== null) {
    return refusal(
      "LimitReached",
      4009,
      `Channel name longer than ${nameMax} characters (max_channel_name_length)`,
    );
  }
  const kind = channelKind(name);
  if (kind !== "private" && kind !== "presence") {
    if (app.enable_user_authentication === 1 && !signedIn) {
      return refusal("AuthError", 401, "This app requires pusher:signin before subscribing");
    }
    return {};
  }
  const channelData = kind === "presence" && typeof data.channel_data === "string"
    ? data.channel_data
    : undefined;
  if (!validChannelAuth(app, socketId, name, data.auth, channelData)) {
    return refusal("AuthError", 401, "Invalid signature for this socket and channel");
  }
  if (kind === "private") return {};
  const member = presenceMember(channelData, app);
  if (!("error" in member)) return { member };
  if (member.limit === undefined) return refusal("AuthError", 400, member.error);
  return refusal(
    "LimitReached",
    4301,
    `Presence member info (user_info) larger than ${member.limit} bytes (max_presence_member_bytes)`,
  );
}

function refusal(type: string, status: number, error: string): SubscriptionRefusal {
  return { type, status, error };
}
