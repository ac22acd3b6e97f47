/**
 * Push dispatch of the thread channel: event name -> needed capability -> live operation.
 * Reasons are the spec's: `forbidden: missing {verb}`, `not_found`, `already_ended`,
 * `forbidden`, `invalid_state`, `archive_unavailable` (others: docs/chat-live.md).
 */
import type { App } from "../../config/apps.ts";
import type { ChatServices } from "../services.ts";
import type { Member } from "./member.ts";
import { type MessageWindow, toWire } from "./messages.ts";
import { LiveError } from "./runs.ts";
import { idProblem, jsonBytes, MAX_MESSAGE_CONTENT_BYTES, MAX_PENDING_RUNS } from "../../limits.ts";
import type { LiveService } from "./service.ts";

/** Everything a push handler needs. */
export interface PushContext {
  svc: ChatServices;
  live: LiveService;
  window: MessageWindow;
  app: App;
  threadId: string;
  member: Member;
}

/** The verb each push needs (`chat:{verb}:{threadId}`). */
const NEEDS: Record<string, string> = {
  send: "publish:user_message",
  edit: "publish:user_message",
  regenerate: "publish:user_message",
  "tool:approve": "tool_approval",
  "tool:reject": "tool_approval",
  load_older: "subscribe",
  "run:start": "publish:run_lifecycle",
  "run:suspend": "publish:run_lifecycle",
  "run:resume": "publish:run_lifecycle",
  "run:end": "publish:run_lifecycle",
  token: "publish:token",
  message: "publish:message",
};

function str(v: unknown, name: string, fallback?: () => string): string {
  if (v === undefined || v === null) {
    if (fallback) return fallback();
    throw new LiveError(`invalid_request: ${name} is required`);
  }
  if (typeof v !== "string" || v === "") {
    throw new LiveError(`invalid_request: ${name} must be a non-empty string`);
  }
  // Ids become parts of storage keys: refuse over-long ones before any write starts.
  const problem = idProblem(name, v);
  if (problem) throw new LiveError(`invalid_request: ${problem}`);
  return v;
}

/** Message content (any JSON), refused above MAX_MESSAGE_CONTENT_BYTES. */
function content(v: unknown): unknown {
  if (jsonBytes(v) > MAX_MESSAGE_CONTENT_BYTES) {
    throw new LiveError(
      `invalid_request: content is larger than ${MAX_MESSAGE_CONTENT_BYTES} bytes`,
    );
  }
  return v;
}

/** Refuses a new run when the thread already has MAX_PENDING_RUNS waiting to start. */
function roomForRun(c: PushContext): void {
  const pending = c.live.runs.all(c.app.id, c.threadId).filter((r) => r.status === "pending");
  if (pending.length >= MAX_PENDING_RUNS) {
    throw new LiveError(
      `invalid_request: too many pending runs (at most ${MAX_PENDING_RUNS} per thread)`,
    );
  }
}

function optStr(v: unknown, name: string): string | undefined {
  return v === undefined || v === null ? undefined : str(v, name);
}

const uuid = () => crypto.randomUUID();

/** Handles one push; resolves with the ok response or throws LiveError / ApiError. */
export function handlePush(c: PushContext, event: string, p: Record<string, unknown>): unknown {
  const { live, app, threadId, member } = c;
  const can = (verb: string) => member.principal.can(`chat:${verb}:${threadId}`);
  if (event === "cancel") {
    const any = can("publish:cancel_any");
    if (!any && !can("cancel_own")) throw new LiveError("forbidden: missing cancel_own");
    return live.cancel(app, threadId, { clientId: member.clientId, any }, str(p.runId, "runId"))
      .then(() => ({}));
  }
  const verb = NEEDS[event];
  if (!verb) throw new LiveError(`unknown event: ${event}`);
  if (!can(verb)) throw new LiveError(`forbidden: missing ${verb}`);
  switch (event) {
    case "token": // synchronous: token order is arrival order
      live.token(app, threadId, str(p.runId, "runId"), typeof p.text === "string" ? p.text : "");
      return {};
    case "send":
      roomForRun(c);
      return live.send(app, threadId, member.clientId, {
        messageId: str(p.messageId, "messageId", uuid),
        runId: str(p.runId, "runId", uuid),
        content: content(p.content ?? p.text ?? ""),
        parentId: optStr(p.parentId, "parentId") ?? null,
        role: p.role === "system" ? "system" : "user",
      });
    case "edit":
      roomForRun(c);
      return live.edit(app, threadId, member.clientId, {
        messageId: str(p.messageId, "messageId"),
        newMessageId: str(p.newMessageId, "newMessageId", uuid),
        runId: str(p.runId, "runId", uuid),
        content: content(p.content ?? ""),
      });
    case "regenerate":
      roomForRun(c);
      return live.regenerate(app, threadId, member.clientId, {
        messageId: str(p.messageId, "messageId"),
        runId: str(p.runId, "runId", uuid),
        parentId: optStr(p.parentId, "parentId"),
      });
    case "tool:approve":
    case "tool:reject":
      return live.decide(
        app,
        threadId,
        member.clientId,
        str(p.runId, "runId"),
        str(p.toolCallId, "toolCallId"),
        event === "tool:approve",
        typeof p.reason === "string" ? p.reason : undefined,
      ).then(() => ({}));
    case "load_older":
      return loadOlder(c, p);
    case "run:start":
      return live.start(app, threadId, member.clientId, str(p.runId, "runId")).then((run) => ({
        run,
      }));
    case "run:suspend": {
      const args = p.args && typeof p.args === "object" && !Array.isArray(p.args)
        ? p.args as Record<string, unknown>
        : {};
      return live.suspend(app, threadId, str(p.runId, "runId"), {
        toolCallId: str(p.toolCallId, "toolCallId", uuid),
        toolName: str(p.toolName, "toolName"),
        args,
      }).then(() => ({}));
    }
    case "run:resume":
      return live.resume(app, threadId, str(p.runId, "runId")).then(() => ({}));
    case "run:end": {
      const reason = p.reason ?? "complete";
      if (reason !== "complete" && reason !== "error") {
        throw new LiveError("invalid_request: reason must be complete or error");
      }
      return live.end(app, threadId, str(p.runId, "runId"), reason, content(p.content))
        .then(() => ({}));
    }
    case "message":
      return c.svc.store.messages.create(app, threadId, {
        id: str(p.messageId, "messageId", uuid),
        role: "assistant",
        content: content(p.content ?? ""),
        parentId: optStr(p.parentId, "parentId") ?? null,
        ownerClientId: member.clientId,
      }, { autoCreateThread: true }).then((r) => ({ messageId: r.message.id, log_id: r.logId }));
  }
  throw new LiveError(`unknown event: ${event}`);
}

function loadOlder(c: PushContext, p: Record<string, unknown>) {
  const limit = typeof p.limit === "number" && p.limit > 0
    ? Math.min(Math.floor(p.limit), 500)
    : 50;
  let page;
  try {
    page = typeof p.before === "string"
      ? c.window.older(c.app, c.threadId, p.before, limit)
      : c.window.recent(c.app, c.threadId, limit);
  } catch {
    // The cursor's page cannot be read (unknown or deleted cursor, thread gone, store error).
    throw new LiveError("archive_unavailable");
  }
  const ids = new Set(page.messages.map((m) => m.runId));
  const runs = c.live.runs.all(c.app.id, c.threadId).filter((r) => ids.has(r.runId));
  return { messages: page.messages.map(toWire), runs, has_older: page.hasOlder };
}
