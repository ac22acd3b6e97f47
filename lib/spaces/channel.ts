/**
 * The Spaces channel: a pure relay with no serial, history or ordering guarantee. Every socket
 * that joins is one member; pushes are relayed as-is to the other members of the space.
 */
import { verifyJoin } from "../auth/join.ts";
import { jsonBytes, MAX_MEMBER_INFO_BYTES } from "../limits.ts";
import type { ChannelHandler, ChannelInstance, JoinContext } from "../socket/handler.ts";
import { errorReply } from "../socket/handler.ts";

/** Largest relayed payload, as JSON bytes. */
export const MAX_SPACE_PAYLOAD_BYTES = 10 * 1024;

/** A member of a space as shown in join replies and `member:enter` / `member:leave`. */
export interface SpaceMember {
  socket_id: string;
  client_id: string | null;
  data: unknown;
}

interface Joined {
  member: SpaceMember;
  push: (event: string, payload: unknown) => void;
}

/** Builds the `spaces` channel handler; members live in memory (per process). */
export function spacesChannel(): ChannelHandler {
  const spaces = new Map<string, Map<string, Joined>>();

  function relay(topic: string, fromSocket: string, event: string, payload: unknown) {
    for (const [socketId, j] of spaces.get(topic) ?? []) {
      if (socketId !== fromSocket) j.push(event, payload);
    }
  }

  return {
    async join(ctx: JoinContext): Promise<ChannelInstance | { error: string }> {
      const cred = await verifyJoin(ctx);
      if ("error" in cred) return cred;
      let clientId: string | undefined;
      if (cred.kind === "token") {
        const principal = cred.principal;
        if (ctx.app.enable_user_authentication === 1 && !principal.can(`channel:subscribe:${ctx.name}`)) {
          return { error: `forbidden: missing channel:subscribe:${ctx.name}` };
        }
        clientId = principal.clientId;
      } else if (ctx.app.enable_user_authentication === 1) {
        return { error: `forbidden: missing channel:subscribe:${ctx.name}` };
      }
      if (clientId === undefined && typeof ctx.params.client_id === "string") {
        clientId = ctx.params.client_id;
      }
      if (jsonBytes(ctx.params.data) > MAX_MEMBER_INFO_BYTES) {
        return { error: `Validation failed: data larger than ${MAX_MEMBER_INFO_BYTES} bytes` };
      }
      const member: SpaceMember = {
        socket_id: ctx.socketId,
        client_id: clientId ?? null,
        data: ctx.params.data ?? null,
      };
      let members = spaces.get(ctx.topic);
      if (!members) spaces.set(ctx.topic, (members = new Map()));
      relay(ctx.topic, ctx.socketId, "member:enter", member);
      members.set(ctx.socketId, { member, push: ctx.push });
      ctx.accept({ members: [...members.values()].map((j) => j.member) });
      return {
        handleIn(event, payload) {
          if (event.startsWith("phx_") || event.startsWith("member:")) {
            return errorReply(`Validation failed: event name ${JSON.stringify(event)} is reserved`);
          }
          const size = jsonBytes(payload ?? null);
          if (size > MAX_SPACE_PAYLOAD_BYTES) {
            return errorReply(`Validation failed: payload larger than ${MAX_SPACE_PAYLOAD_BYTES} bytes`);
          }
          relay(ctx.topic, ctx.socketId, event, payload);
          return { status: "ok", response: {} };
        },
        terminate() {
          const set = spaces.get(ctx.topic);
          if (!set?.delete(ctx.socketId)) return;
          if (set.size === 0) spaces.delete(ctx.topic);
          relay(ctx.topic, ctx.socketId, "member:leave", member);
        },
      };
    },
  };
}
