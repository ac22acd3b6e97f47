/**
 * Chat records as stored in LMDB and carried in thread-log entries. Shared by the REST surface
 * (lib/chat/rest) and the live thread channel (lib/chat/live). Times are unix milliseconds.
 */
import type { ChatMessage, MessageRole, MessageStatus } from "../../sdk/shared/chat_wire.ts";
export type { MessageRole, MessageStatus };

/** Thread lifecycle; see docs/chat-rest.md "Thread status transitions". */
export type ThreadStatus = "open" | "bot" | "human" | "resolved" | "archived";

/** Every thread status, in lifecycle order. */
export const THREAD_STATUSES: readonly ThreadStatus[] = [
  "open",
  "bot",
  "human",
  "resolved",
  "archived",
];

/** A conversation. `id` is caller-chosen (or generated on REST create). */
export interface Thread {
  id: string;
  appId: string;
  title: string | null;
  status: ThreadStatus;
  /** The assigned bot (kept after handoff/resolve so the bot learns of the change). */
  botId: string | null;
  metadata: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  /** createdAt of the newest message, null before the first one. */
  lastMessageAt: number | null;
}

/**
 * One message: the wire shape (sdk/shared/chat_wire.ts, shared with the client SDK) with
 * `messageId` stored as `id` (chosen by the caller). `content` is codec-defined (plain text
 * by default), null once soft-deleted.
 */
export interface MessageRecord extends Omit<ChatMessage, "messageId"> {
  id: string;
}

/** Participant roles. */
export type ParticipantRole = "member" | "admin" | "observer" | "agent";

/** Every participant role. */
export const PARTICIPANT_ROLES: readonly ParticipantRole[] = [
  "member",
  "admin",
  "observer",
  "agent",
];

/** Someone (a user, an agent or a bot) taking part in a thread. */
export interface Participant {
  id: string;
  threadId: string;
  /** The customer's user id (the live `client_id`), when known. */
  clientId: string | null;
  displayName: string | null;
  role: ParticipantRole;
  botId: string | null;
  metadata: Record<string, unknown>;
  lastReadMessageId: string | null;
  lastReadAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One emoji reaction of one participant on one message (unique per message+participant+emoji). */
export interface Reaction {
  id: string;
  threadId: string;
  messageId: string;
  participantId: string;
  emoji: string;
  createdAt: number;
}

/** Bot webhook event types; see docs/chat-rest.md "Webhooks". */
export type BotEventType =
  | "message.created"
  | "message.updated"
  | "message.deleted"
  | "thread.status_changed";

/** Every bot webhook event type. */
export const BOT_EVENT_TYPES: readonly BotEventType[] = [
  "message.created",
  "message.updated",
  "message.deleted",
  "thread.status_changed",
];

/** A bot: receives webhooks for the threads it is assigned to. */
export interface Bot {
  id: string;
  appId: string;
  name: string;
  webhookUrl: string | null;
  /** Event types delivered to the webhook. */
  events: BotEventType[];
  metadata: Record<string, unknown>;
  /** HMAC key for webhook signatures. Never leaves the server after create/rotate. */
  webhookSecret: string;
  createdAt: number;
  updatedAt: number;
}

/** One thread-log entry: a wire event name and its payload (without `log_id`). */
export interface ThreadEntry {
  event: string;
  data: Record<string, unknown>;
}
