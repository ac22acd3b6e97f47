/** Inbound Pusher protocol messages: a text frame read as `{ event, channel?, data }`. */
import { MAX_FRAME_BYTES } from "../wire/codec.ts";

/** One inbound message as the connection dispatches it. */
export interface Inbound {
  event: string;
  channel?: unknown;
  data?: unknown;
}

/** An inbound `{ event, channel?, data }`, or the reason it is unusable. */
export function parseInbound(raw: string | Uint8Array): Inbound | string {
  if (typeof raw !== "string") return "Binary frames are not part of the Pusher protocol";
  if (raw.length > MAX_FRAME_BYTES) return `Message too large: limit is ${MAX_FRAME_BYTES} bytes`;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return "Malformed message: not JSON";
  }
  if (
    typeof value !== "object" || value === null ||
    typeof (value as { event?: unknown }).event !== "string"
  ) {
    return "Malformed message: expected { event, data }";
  }
  const msg = value as Inbound;
  // pusher-js sends data as an object; other clients send it JSON-encoded.
  if (typeof msg.data === "string" && !msg.event.startsWith("client-")) {
    try {
      msg.data = JSON.parse(msg.data);
    } catch { /* keep the string */ }
  }
  return msg;
}

/** `data` when it is an object, else an empty one. */
export function objectOf(data: unknown): Record<string, unknown> {
  return typeof data === "object" && data !== null && !Array.isArray(data)
    ? data as Record<string, unknown>
    : {};
}
