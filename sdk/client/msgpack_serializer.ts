/**
 * MessagePack encode/decode for the phoenix `Socket` (`encode` / `decode` options): each frame
 * is one MessagePack array `[join_ref, ref, topic, event, payload]`, matching the server's
 * `format=msgpack` mode. Use with `binaryType: "arraybuffer"`.
 */
import { Packr } from "msgpackr";

/** A decoded Phoenix message as the phoenix client handles it. */
export interface PhoenixMessage {
  join_ref: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: unknown;
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/** Encodes a message as one MessagePack frame. */
export function msgpackEncode(
  msg: PhoenixMessage,
  callback: (data: Uint8Array) => unknown,
): unknown {
  return callback(
    packr.pack([msg.join_ref ?? null, msg.ref ?? null, msg.topic, msg.event, msg.payload]),
  );
}

/** Decodes a MessagePack frame (or a JSON text frame, for robustness). */
export function msgpackDecode(
  raw: ArrayBuffer | Uint8Array | string,
  callback: (msg: PhoenixMessage) => unknown,
): unknown {
  const value = typeof raw === "string"
    ? JSON.parse(raw)
    : packr.unpack(raw instanceof Uint8Array ? raw : new Uint8Array(raw));
  const [join_ref, ref, topic, event, payload] = value as [
    string | null,
    string | null,
    string,
    string,
    unknown,
  ];
  return callback({ join_ref, ref, topic, event, payload });
}

/** The options to spread into `new Socket(url, { ...msgpackSocketOptions })`. */
export const msgpackSocketOptions = {
  encode: msgpackEncode,
  decode: msgpackDecode,
  binaryType: "arraybuffer" as const,
};
