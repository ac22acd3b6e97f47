/**
 * Wire shapes of chat runs, defined once for the server (lib/chat/live/runs.ts stores and
 * sends them) and the client SDK (which receives them): docs/chat-live.md "Runs".
 */

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
