/**
 * The Spaces channel: a pure relay with no serial, history or ordering guarantee. Every socket
 * that joins is one member; pushes are relayed as-is to the other members of the space.
 */
import { verifyJoin } from "../auth/join.ts";
import { jsonBytes, MAX_MEMBER_INFO_BYTES } from "../limits.ts";
import type { ChannelHandler, ChannelInstance, JoinContext } from "../socket/handler.ts";
import { errorReply } from "../socket/handler.ts";
import type { Hub } from "../hub/hub.ts";
import type { PresenceRegistry } from "../pubsub/presence.ts";

/** Largest relayed payload, as JSON bytes. */
export const MAX_SPACE_PAYLOAD_BYTES = 10 * 1024;

/** A member of a space as shown in join replies and `member:enter` / `member:leave`. */
export interface SpaceMember {
  socket_id: string;
  client_id: string | null;
  data: unknown;
}

/** What a member's registry entry holds besides its socket id. */
type MemberInfo = Omit<SpaceMember, "socket_id">;

/** The member as sent on the wire. */
export function spaceMember(socketId: string, info: unknown): SpaceMember {
  return { socket_id: socketId, ...(info as MemberInfo) };
}

/**
 * Builds the `spaces` channel handler. Members are kept in `members` (user id = socket id),
 * which a cluster shares between nodes; pushes go out through the hub with reach `"cluster"`, so
 * members on other nodes get them too.
 */
export function spacesChannel(hub: Hub, members: PresenceRegistry): ChannelHandler {
  return {
    async join(ctx: JoinContext): Promise<ChannelInstance | { error: string }> {
      const cred = await verifyJoin(ctx);
      if ("error" in cred) return cred;
      let clientId: string | undefined;
      if (cred.kind === "token") {
        const principal = cred.principal;
        if (
          ctx.app.enable_user_authentication === 1 &&
          !principal.can(`channel:subscribe:${ctx.topic.name}`)
        ) {
          return { error: `forbidden: missing channel:subscribe:${ctx.topic.name}` };
        }
        clientId = principal.clientId;
      } else if (ctx.app.enable_user_authentication === 1) {
        return { error: `forbidden: missing channel:subscribe:${ctx.topic.name}` };
      }
      if (clientId === undefined && typeof ctx.params.client_id === "string") {
        clientId = ctx.params.client_id;
      }
      if (jsonBytes(ctx.params.data) > MAX_MEMBER_INFO_BYTES) {
        return { error: `Validation failed: data larger than ${MAX_MEMBER_INFO_BYTES} bytes` };
      }
      const info: MemberInfo = { client_id: clientId ?? null, data: ctx.params.data ?? null };
      // Entered before subscribing, so the joiner does not get its own `member:enter` (the
      // registry's observer tells the members, here and, through the cluster, on other nodes).
      members.add(ctx.topic, ctx.socketId, info, members.node, ctx.socketId);
      ctx.accept({
        members: members.members(ctx.topic).map((m) => spaceMember(m.user_id, m.user_info)),
      });
      ctx.subscribe();
      return {
        handleIn(event, payload) {
          if (event.startsWith("phx_") || event.startsWith("member:")) {
            return errorReply(`Validation failed: event name ${JSON.stringify(event)} is reserved`);
          }
          const size = jsonBytes(payload ?? null);
          if (size > MAX_SPACE_PAYLOAD_BYTES) {
            return errorReply(
              `Validation failed: payload larger than ${MAX_SPACE_PAYLOAD_BYTES} bytes`,
            );
          }
          hub.publish(ctx.topic, event, payload, ctx.socketId, "cluster");
          return { status: "ok", response: {} };
        },
        terminate() {
          ctx.unsubscribe();
          members.remove(ctx.topic, ctx.socketId, members.node, ctx.socketId);
        },
      };
    },
  };
}
