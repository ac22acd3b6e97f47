/**
 * The read-only Durable Object channel (`durable:{appKey}:{type}:{key}`): authorizes the join,
 * replays entries after `after_log_id`, replies with the snapshot and streams live events with
 * nothing dropped or duplicated (the join-without-gaps pattern of the ordered log).
 */
import { verifyJoin } from "../auth/join.ts";
import { type ChannelHandler, errorReply, type JoinContext } from "../socket/handler.ts";
import { MAX_NAME_BYTES, objectTypeProblem } from "./limits.ts";
import { byteLength } from "./ops.ts";
import { isRefusal, objectName } from "../streams/mod.ts";
import { addressOf, type ObjectRef, type ObjectStore } from "./store.ts";

/** The push refusal the spec prescribes for this read-only channel. */
export const READ_ONLY_REASON = "writes must go through the server SDK";

/** Join auth: the app secret (`app_secret`) or a token with `object:read:{type}/{key}`. */
async function authorize(ctx: JoinContext, type: string, key: string): Promise<string | null> {
  const cred = await verifyJoin(ctx, { appSecret: true });
  if ("error" in cred) return cred.error;
  if (cred.kind === "app_secret") return null;
  if (cred.kind !== "token") return "auth required for durable object channels";
  const needed = `object:read:${type}/${key}`;
  return cred.principal.can(needed) ? null : `forbidden: missing ${needed}`;
}

/** Builds the `durable` channel handler over `store`. */
export function objectChannel(store: ObjectStore): ChannelHandler {
  return {
    async join(ctx) {
      const { type, key } = objectName(ctx.topic.name) ?? { type: "", key: "" };
      if (
        type === "" || key === "" || objectTypeProblem(type) ||
        byteLength(type) > MAX_NAME_BYTES || byteLength(key) > MAX_NAME_BYTES
      ) {
        return { error: "invalid topic format" };
      }
      const refused = await authorize(ctx, type, key);
      if (refused) return { error: refused };
      const from = store.streams.position(ctx.params);
      if (isRefusal(from)) return from;

      const ref: ObjectRef = { appId: ctx.app.id, appKey: ctx.app.key, type, key };
      const addr = addressOf(ref);
      const joined = await store.streams.join(ctx, addr, {
        from,
        snapshot: () => {
          const snap = store.snapshot(ref);
          return { position: snap.log_id, value: snap };
        },
        reply: (snap) => ({ ...snap }),
      });
      if (!joined) return { error: "join ended" };
      return { handleIn: () => errorReply(READ_ONLY_REASON) };
    },
  };
}
