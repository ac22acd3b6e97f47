/**
 * Runs of a thread: the record, its pure state machine, and its table.
 *
 * State machine (docs/chat-live.md "Runs"):
 *   pending --agent run:start--> active            (only when no other run of the thread is
 *                                                   active or suspended: runs queue)
 *   active  --agent run:suspend--> suspended
 *   suspended --agent run:resume--> active
 *   any non-terminal --run:end / cancel--> complete | cancelled | error
 * Anything else is `invalid_state`; ending a terminal run is `already_ended`.
 */
import type { Table } from "../../store/table.ts";
import type { Commits, Storage } from "../../store/storage.ts";
import { MAX_ID_BYTES } from "../../limits.ts";

import type { RunInfo } from "../../../sdk/shared/chat_wire.ts";
export type { RunStatus, SuspendedTool } from "../../../sdk/shared/chat_wire.ts";
import type { RunStatus, SuspendedTool } from "../../../sdk/shared/chat_wire.ts";

/** A run as stored and as sent on the wire: the shared `RunInfo` (sdk/shared/chat_wire.ts). */
export type RunRecord = RunInfo;

/** A live push failure carrying the spec's reason string. */
export class LiveError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "LiveError";
  }
}

/** A string after every run id in key order: run ids are at most MAX_ID_BYTES of UTF-8, and
 * this is longer and made of the highest code point (a range ending at `"\uffff"` left out the
 * runs whose id starts with an emoji or any other character above U+FFFF). */
const AFTER_EVERY_RUN_ID = "\u{10FFFF}".repeat(MAX_ID_BYTES / 4 + 1);

/** Terminal statuses. */
export const TERMINAL: ReadonlySet<RunStatus> = new Set(["complete", "cancelled", "error"]);

/** Whether the run is finished. */
export function isTerminal(run: RunRecord): boolean {
  return TERMINAL.has(run.status);
}

/** A fresh pending run. */
export function newRun(fields: {
  runId: string;
  ownerClientId: string;
  messageId: string;
  parentId: string | null;
  forkOf?: string | null;
  msgRegenerate?: string | null;
}, now = Date.now()): RunRecord {
  return {
    runId: fields.runId,
    ownerClientId: fields.ownerClientId,
    status: "pending",
    startedAt: now,
    endedAt: null,
    suspendedTool: null,
    parentId: fields.parentId,
    forkOf: fields.forkOf ?? null,
    msgRegenerate: fields.msgRegenerate ?? null,
    messageId: fields.messageId,
    createdAt: now,
    toolDecision: null,
    agentId: null,
  };
}

/** pending -> active. `busy` is whether another run of the thread is active or suspended. */
export function startRun(
  run: RunRecord,
  busy: boolean,
  agentId: string,
  now = Date.now(),
): RunRecord {
  if (isTerminal(run)) throw new LiveError("already_ended");
  if (run.status !== "pending" || busy) throw new LiveError("invalid_state");
  return { ...run, status: "active", startedAt: now, agentId };
}

/** active -> suspended, waiting for a decision on `tool`. */
export function suspendRun(run: RunRecord, tool: SuspendedTool): RunRecord {
  if (isTerminal(run)) throw new LiveError("already_ended");
  if (run.status !== "active") throw new LiveError("invalid_state");
  return { ...run, status: "suspended", suspendedTool: tool, toolDecision: null };
}

/** Records a human decision on the suspended tool call (the run stays suspended). */
export function decideTool(run: RunRecord, toolCallId: string, approved: boolean): RunRecord {
  if (isTerminal(run)) throw new LiveError("already_ended");
  if (run.status !== "suspended" || run.suspendedTool?.toolCallId !== toolCallId) {
    throw new LiveError("invalid_state");
  }
  if (run.toolDecision !== null) throw new LiveError("invalid_state");
  return { ...run, toolDecision: approved ? "approved" : "rejected" };
}

/** suspended -> active. */
export function resumeRun(run: RunRecord): RunRecord {
  if (isTerminal(run)) throw new LiveError("already_ended");
  if (run.status !== "suspended") throw new LiveError("invalid_state");
  return { ...run, status: "active", suspendedTool: null, toolDecision: null };
}

/** Any non-terminal -> the status matching `reason`. */
export function endRun(
  run: RunRecord,
  reason: "complete" | "cancelled" | "error",
  now = Date.now(),
): RunRecord {
  if (isTerminal(run)) throw new LiveError("already_ended");
  return { ...run, status: reason, endedAt: now, suspendedTool: null };
}

/**
 * Runs table: key `[appId, threadId, runId]`. Writes only inside a thread-log `apply`. A run is
 * read on every token push, so reads go through the commit queue's cache (see `CommitQueue`);
 * writes go to the store at once (range reads in the same transaction see them) and are
 * tracked for that cache.
 */
export class RunTable {
  #db: Table<RunRecord>;
  #commits: Commits;

  constructor(env: Storage) {
    this.#db = env.db<RunRecord>("chat:live:runs");
    this.#commits = env.commits;
  }

  /** One run, or undefined. */
  get(appId: string, threadId: string, runId: string): RunRecord | undefined {
    return this.#commits.read(this.#db, [appId, threadId, runId]);
  }

  /** Stores a run (inside a transaction). */
  put(appId: string, threadId: string, run: RunRecord): void {
    const key = [appId, threadId, run.runId];
    this.#db.put(key, run);
    this.#commits.track(this.#db, key, run);
  }

  /** Every run of a thread (key order). */
  all(appId: string, threadId: string): RunRecord[] {
    const out: RunRecord[] = [];
    for (
      const { value } of this.#db.getRange({
        start: [appId, threadId, ""],
        end: [appId, threadId, AFTER_EVERY_RUN_ID],
      })
    ) {
      out.push(value);
    }
    return out;
  }

  /** Whether a run other than `except` is active or suspended. */
  busy(appId: string, threadId: string, except?: string): boolean {
    return this.all(appId, threadId).some((r) =>
      r.runId !== except && (r.status === "active" || r.status === "suspended")
    );
  }

  /** Removes every run of a thread (thread purge). */
  removeThread(appId: string, threadId: string): void {
    for (const r of this.all(appId, threadId)) {
      const key = [appId, threadId, r.runId];
      this.#db.remove(key);
      this.#commits.track(this.#db, key, undefined);
    }
  }
}
