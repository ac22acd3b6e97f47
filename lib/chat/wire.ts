/**
 * The one wire shape of a chat message: the store record with `id` renamed `messageId` (the
 * spec's "Chat message (wire shape)"). Join snapshots, `load_older`, and every live or replayed
 * thread event use it, so a client sees one shape for one message.
 */
import type { ChatMessage } from "../../sdk/shared/chat_wire.ts";
import type { MessageRecord } from "./types.ts";

/** A message as clients see it: the shared wire type (sdk/shared/chat_wire.ts). */
export type WireMessage = ChatMessage;

/** Record -> wire shape (any object with an `id`, e.g. a deletion marker, is renamed too). */
export function toWire(m: MessageRecord): WireMessage {
  const { id, ...rest } = m;
  return { messageId: id, ...rest };
}

/** The payload data of a thread-log event with every message in the wire shape. */
export function wireEventData(data: Record<string, unknown>): Record<string, unknown> {
  let out = data;
  if (isRecord(data.message)) out = { ...out, message: toWire(data.message) };
  if (Array.isArray(data.messages)) {
    out = { ...out, messages: data.messages.map((m) => (isRecord(m) ? toWire(m) : m)) };
  }
  if (Array.isArray(data.ops)) {
    out = {
      ...out,
      ops: data.ops.map((op: { op: string; slot: string; value?: unknown }) =>
        op.op === "set" && op.slot.startsWith("message:") && isRecord(op.value)
          ? { ...op, value: toWire(op.value) }
          : op
      ),
    };
  }
  return out;
}

function isRecord(v: unknown): v is MessageRecord {
  return typeof v === "object" && v !== null && typeof (v as { id?: unknown }).id === "string";
}
