/**
 * The rules a `client-*` event meets before it goes out: a private or presence channel (not an
 * encrypted one), client events enabled for the app, Pusher's event names, JSON data, and the
 * app's name and payload limits. The rate limit and the publish stay with the connection.
 */
import type { App } from "../config/apps.ts";
import { eventNameOver, payloadOver } from "../pubsub/app_limits.ts";
import { channelKind, eventNameProblem, jsonBytes } from "../pubsub/names.ts";
import { jsonProblem } from "../wire/codec.ts";

/** A `pusher:error` to send: Pusher's code (null where it has none) and the message. */
export interface PusherError {
  code: number | null;
  message: string;
}

/** Why client event `event` on channel `name` (subscribed to) is refused, or null. */
export function clientEventRefusal(
  app: App,
  name: string,
  event: string,
  data: unknown,
): PusherError | null {
  const kind = channelKind(name);
  if ((kind !== "private" && kind !== "presence") || name.startsWith("private-encrypted-")) {
    return {
      code: null,
      message: "Client events are only allowed on private and presence channels",
    };
  }
  if (!app.enable_client_messages) {
    return { code: null, message: "Client events are disabled for this app" };
  }
  const nameMax = eventNameOver(app, event);
  if (nameMax !== null) {
    return {
      code: 4301,
      message:
        `Client event rejected: event name longer than ${nameMax} characters (max_event_name_length)`,
    };
  }
  const problem = eventNameProblem(event);
  if (problem) return { code: null, message: `Client event rejected: ${problem}` };
  const invalid = jsonProblem(data, 0);
  if (invalid) return { code: null, message: `Client event rejected: invalid data: ${invalid}` };
  const payloadMax = payloadOver(app, jsonBytes(data));
  if (payloadMax !== null) {
    return {
      code: 4301,
      message:
        `Client event rejected: data larger than ${payloadMax} bytes (max_event_payload_bytes)`,
    };
  }
  return null;
}
