/**
 * Wire shapes of chat threads, defined once for the server (lib/chat/live/runs.ts and
 * lib/chat/wire.ts store and send them) and the client SDK (which receives them):
 * docs/chat-live.md "Runs" and the message shape.
 */

/** Message roles. */
export type MessageRole = "user" | "assistant" | "system";

/** Message status values. */
export type MessageStatus = "streaming" | "complete" | "cancelled" | "error";

/**
 * A chat message as the thread channel carries it (and the store keeps it, with `id` for
 * `messageId`). `Content` types what the app sends as content (with the AI SDK:
 * `string | PartsContent<Metadata>`); it is null once the message is soft-deleted.
 */
export interface ChatMessage<Content = unknown> {
  messageId: string;
  threadId: string;
  runId: string | null;
  ownerClientId: string | null;
  role: MessageRole;
  content: Content | null;
  parentId: string | null;
  forkOf: string | null;
  msgRegenerate: string | null;
  status: MessageStatus;
  createdAt: number;
  updatedAt: number;
  editedAt: number | null;
  deletedAt: number | null;
  authorParticipantId: string | null;
  botId: string | null;
}

/** Run status values. */
export type RunStatus = "pending" | "active" | "suspended" | "complete" | "cancelled" | "error";

/** A tool call waiting for a human decision. */
export interface SuspendedTool {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
}

/** A run as the server stores it and sends it on the wire (RunInfo plus the extension fields). */
export interface RunInfo {
  runId: string;
  ownerClientId: string;
  status: RunStatus;
  /** Creation time while pending; the time of run:start afterwards. */
  startedAt: number;
  endedAt: number | null;
  suspendedTool: SuspendedTool | null;
  parentId: string | null;
  forkOf: string | null;
  msgRegenerate: string | null;
  /** Extension: the assistant message this run streams into (created with the run). */
  messageId: string;
  /** Extension: creation time (runs are listed in this order). */
  createdAt: number;
  /** Extension: the human decision on the suspended tool call, null until made. */
  toolDecision: "approved" | "rejected" | null;
  /** Extension: the agent that started the run, null while pending. */
  agentId: string | null;
}
