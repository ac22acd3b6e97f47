import { Packr } from "msgpackr";

/** A Phoenix V2 frame: `[join_ref, ref, topic, event, payload]`. */
export type Frame = [string | null, string | null, string, string, unknown];

/** Wire format of one socket, chosen by `format=msgpack` on the URL (default JSON). */
export type WireFormat = "json" | "msgpack";

/** Largest accepted inbound frame, in bytes (documented in docs/protocol.md). */
export const MAX_FRAME_BYTES = 1024 * 1024;

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** Encodes a frame for the wire: a JSON string or MessagePack bytes. */
export function encodeFrame(frame: Frame, format: WireFormat): string | Uint8Array {
  return format === "json" ? JSON.stringify(frame) : packr.pack(frame);
}

/** Parses an inbound frame; returns a reason string when it is malformed. */
export function decodeFrame(data: string | Uint8Array, format: WireFormat): Frame | string {
  const size = typeof data === "string" ? data.length : data.byteLength;
  if (size > MAX_FRAME_BYTES) return `frame too large: limit is ${MAX_FRAME_BYTES} bytes`;
  let value: unknown;
  try {
    if (typeof data === "string") {
      value = JSON.parse(data);
    } else if (format === "msgpack") {
      value = packr.unpack(data);
    } else {
      value = JSON.parse(new TextDecoder().decode(data));
    }
  } catch {
    return format === "json" ? "malformed frame: not JSON" : "malformed frame: not MessagePack";
  }
  if (!Array.isArray(value) || value.length !== 5) {
    return "malformed frame: expected [join_ref, ref, topic, event, payload]";
  }
  const [joinRef, ref, topic, event, payload] = value;
  const refOk = (v: unknown) => v === null || typeof v === "string" || typeof v === "number";
  if (!refOk(joinRef) || !refOk(ref)) return "malformed frame: refs must be strings or null";
  if (typeof topic !== "string" || typeof event !== "string") {
    return "malformed frame: topic and event must be strings";
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    return "malformed frame: payload must be an object";
  }
  const str = (v: unknown) => (v === null ? null : String(v));
  return [str(joinRef), str(ref), topic, event, payload];
}
