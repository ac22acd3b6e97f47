// The Phoenix V2 frame codec: JSON and MessagePack encodings of the same values, with the
// inbound limits (frame size, nesting) checked while decoding.
import { Packr } from "msgpackr";

/** A Phoenix V2 frame: `[join_ref, ref, topic, event, payload]`. */
export type Frame = [string | null, string | null, string, string, unknown];

/** Wire format of one socket, chosen by `format=msgpack` on the URL (default JSON). */
export type WireFormat = "json" | "msgpack";

/** Largest accepted inbound frame, in bytes (documented in docs/protocol.md). */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** Deepest nesting of arrays and objects accepted in a payload. */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * The one MessagePack codec of the wire. 64-bit integers decode as JavaScript numbers, exactly
 * as `JSON.parse` reads a large integer literal, so both formats carry the same values and no
 * product ever holds a BigInt that JSON cannot encode (docs/protocol.md "Values").
 */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/** Encodes a frame for the wire: a JSON string or MessagePack bytes. */
export function encodeFrame(frame: Frame, format: WireFormat): string | Uint8Array {
  return format === "json" ? JSON.stringify(frame) : packr.pack(frame);
}

const utf8 = new TextEncoder();

/** Size of an inbound frame in bytes (UTF-8 for text frames). */
function frameBytes(data: string | Uint8Array): number {
  if (typeof data !== "string") return data.byteLength;
  // A UTF-16 unit is at most 3 UTF-8 bytes: skip the count when the bound cannot be reached.
  if (data.length * 3 <= MAX_FRAME_BYTES) return data.length;
  return utf8.encode(data).byteLength;
}

/** A decoded frame whose payload holds a value JSON cannot carry: answered on its ref. */
export interface RefusedFrame {
  refused: string;
  frame: Frame;
}

/**
 * Parses an inbound frame. Returns a reason string when the frame itself is malformed, and a
 * `RefusedFrame` when the frame is well-formed but its payload holds a value that the other
 * wire format could not carry (so the push or join gets an error reply).
 */
export function decodeFrame(
  data: string | Uint8Array,
  format: WireFormat,
): Frame | RefusedFrame | string {
  if (frameBytes(data) > MAX_FRAME_BYTES) {
    return `frame too large: limit is ${MAX_FRAME_BYTES} bytes`;
  }
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
  const refOk = (v: unknown) =>
    v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));
  if (!refOk(joinRef) || !refOk(ref)) return "malformed frame: refs must be strings or null";
  if (typeof topic !== "string" || typeof event !== "string") {
    return "malformed frame: topic and event must be strings";
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    return "malformed frame: payload must be an object";
  }
  const str = (v: unknown) => (v === null ? null : String(v));
  const frame: Frame = [str(joinRef), str(ref), topic, event, payload];
  const problem = jsonProblem(payload, 0);
  return problem ? { refused: `invalid payload: ${problem}`, frame } : frame;
}

/** An object key storage cannot keep (msgpackr renames it on decode to stop prototype pollution). */
export const PROTO_KEY = "__proto__";
/** The refusal detail for `PROTO_KEY`. */
export const PROTO_PROBLEM = 'a key named "__proto__" is not supported';

/** Whether a parsed JSON value holds an object key named `__proto__` anywhere. */
export function hasProtoKey(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(hasProtoKey);
  for (const key in value) {
    if (key === PROTO_KEY || hasProtoKey((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** Whether a request body of `contentType` must be refused for `PROTO_KEY`: a JSON body that
 * holds such a key (free for a body that does not contain the text at all). */
export function protoProblem(text: string, contentType: string | null | undefined): boolean {
  if (!text.includes(PROTO_KEY) || !(contentType ?? "").includes("json")) return false;
  try {
    return hasProtoKey(JSON.parse(text));
  } catch {
    return false; // the route answers malformed JSON itself
  }
}

/**
 * Why `value` is not plain JSON (null, boolean, finite number, string, array, plain object),
 * or null when it is. MessagePack can carry binary, extension types (dates), NaN and the
 * infinities; JSON text can overflow to an infinity (`1e400`). None of those survive the other
 * format, so they are refused at the socket instead of reaching a product.
 */
export function jsonProblem(value: unknown, depth: number): string | null {
  switch (typeof value) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(value) ? null : "numbers must be finite";
    case "object": {
      if (value === null) return null;
      if (depth >= MAX_PAYLOAD_DEPTH) return `nested deeper than ${MAX_PAYLOAD_DEPTH} levels`;
      if (Array.isArray(value)) {
        for (const item of value) {
          const p = jsonProblem(item, depth + 1);
          if (p) return p;
        }
        return null;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        return "binary, dates and other extension types are not supported";
      }
      for (const key in value) {
        if (key === PROTO_KEY) return PROTO_PROBLEM;
        const p = jsonProblem((value as Record<string, unknown>)[key], depth + 1);
        if (p) return p;
      }
      return null;
    }
    default:
      return `${typeof value} values are not supported`;
  }
}
