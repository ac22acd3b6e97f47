/**
 * The thread channel handler (`chat:{appKey}:{threadId}`): join authorization (token,
 * anonymous default set, agent secret), the gap-free join (replay, snapshot, live), and the
 * dispatch of pushes to the live service with capability checks.
 */
import { CHAT_AGENT_VERBS, CHAT_CLIENT_VERBS, makePrincipal, verifyJoin } from "../../auth/mod.ts";
import type {
  ChannelHandler,
  ChannelInstance,
  JoinContext,
  PushReply,
} from "../../socket/handler.ts";
import type { ChatServices } from "../services.ts";
import { MessageWindow, reasonOf, toWire } from "./messages.ts";
import { isTerminal, LiveError } from "./runs.ts";
import type { LiveService } from "./service.ts";
import { handlePush } from "./pushes.ts";
import type { Member } from "./member.ts";
import { idProblem } from "../../limits.ts";
import { isRefusal } from "../../streams/mod.ts";

/** Messages in a join snapshot (older ones come from `load_older`). */
export const SNAPSHOT_WINDOW = 50;

export type { Member } from "./member.ts";

async function authorize(ctx: JoinContext): Promise<Member | { error: string }> {
  const threadId = ctx.topic.name;
  const caps = (verbs: readonly string[]) => verbs.map((v) => `chat:${v}:${threadId}`);
  const p = ctx.params;
  const cred = await verifyJoin(ctx, { agentSecret: true });
  if ("error" in cred) return cred;
  if (cred.kind === "agent") {
    const agentId = cred.agentId;
    const principal = makePrincipal({
      socketId: ctx.socketId,
      clientId: agentId,
      kind: "agent",
      capabilities: caps(CHAT_AGENT_VERBS),
      literal: true, // built-in grants name this thread exactly, even when its id holds `*`
    });
    return { principal, clientId: agentId, agent: true };
  }
  const paramClient = typeof p.client_id === "string" && p.client_id !== ""
    ? p.client_id
    : undefined;
  if (cred.kind === "token") {
    const principal = cred.principal;
    if (!principal.can(`chat:subscribe:${threadId}`)) {
      return { error: `forbidden: missing chat:subscribe:${threadId}` };
    }
    const clientId = principal.clientId ?? paramClient ?? `socket:${ctx.socketId}`;
    return { principal, clientId, agent: false };
  }
  if (ctx.app.enable_user_authentication === 1) return { error: "auth required" };
  const clientId = paramClient ?? `socket:${ctx.socketId}`;
  const principal = makePrincipal({
    socketId: ctx.socketId,
    clientId,
    kind: "anonymous",
    capabilities: caps(CHAT_CLIENT_VERBS),
    literal: true,
  });
  return { principal, clientId, agent: false };
}

/** Builds the chat ChannelHandler over the shared services and the live service. */
export function threadChannel(
  svc: ChatServices,
  live: LiveService,
  window: MessageWindow,
): ChannelHandler {
  return {
    async join(ctx: JoinContext): Promise<ChannelInstance | { error: string }> {
      if (idProblem("thread id", ctx.topic.name)) return { error: "invalid topic format" };
      const member = await authorize(ctx);
      if ("error" in member) return member;
      const clientProblem = idProblem(member.agent ? "agent_id" : "client_id", member.clientId);
      if (clientProblem) return { error: `invalid ${clientProblem}` };
      const app = ctx.app;
      const threadId = ctx.topic.name;
      const log = svc.threadLog;
      const from = log.streams.position(ctx.params);
      if (isRefusal(from)) return from;
      const addr = log.address(app, threadId);

      let unregister: (() => void) | undefined;
      if (member.agent) {
        unregister = live.addAgent(app, threadId, (event, payload) => ctx.push(event, payload));
      }
      // Replay, then the snapshot at N (window, runs, streaming text) and live from N + 1. A
      // position older than the log (or from another epoch) gets a flagged fresh snapshot.
      const joined = await log.streams.join(ctx, addr, {
        from,
        gap: "reset",
        snapshot: () => {
          const head = log.head(app, threadId);
          const recent = window.recent(app, threadId, SNAPSHOT_WINDOW);
          const inWindow = new Set(recent.messages.map((m) => m.runId).filter((r) => r !== null));
          const runs = live.runs.all(app.id, threadId).filter((r) =>
            !isTerminal(r) || inWindow.has(r.runId)
          );
          return { position: head, value: { head, recent, runs } };
        },
        reply: ({ head, recent, runs }) => {
          const streams: Record<string, string> = {};
          for (const run of runs) {
            if (isTerminal(run)) continue;
            const text = live.streamText(addr.topic, run.runId);
            if (text !== "") streams[run.runId] = text;
          }
          return {
            log_id: head,
            messages: recent.messages.map(toWire),
            runs,
            streams,
            has_older: recent.hasOlder,
            client_id: member.clientId,
          };
        },
      }).catch((err) => {
        unregister?.();
        throw err;
      });
      if (!joined) {
        unregister?.();
        return { error: "join ended" };
      }

      return {
        handleIn(event: string, payload: Record<string, unknown>): PushReply | Promise<PushReply> {
          try {
            // Token pushes answer synchronously: no promise per token frame.
            const response = handlePush(
              { svc, live, window, app, threadId, member },
              event,
              payload ?? {},
            );
            return response instanceof Promise
              ? response.then(okReply, refusedReply)
              : okReply(response);
          } catch (err) {
            return refusedReply(err);
          }
        },
        terminate() {
          // A client or agent going away is not a cancellation: runs keep their state.
          unregister?.();
        },
      };
    },
  };
}

/** A push's ok reply. */
function okReply(response: unknown): PushReply {
  return { status: "ok", response };
}

/** A push's error reply, with the spec's reason for `err`. */
function refusedReply(err: unknown): PushReply {
  return { status: "error", response: { reason: reasonOf(err) } };
}

export { LiveError };
