/**
 * The read-only Durable Object channel (`durable:{appKey}:{type}:{key}`): authorizes the join,
 * replays entries after `after_log_id`, replies with the snapshot and streams live events with
 * nothing dropped or duplicated (the join-without-gaps pattern of the ordered log).
 */
import { constantTimeEqual } from "../auth/verify.ts";
import { type ChannelHandler, errorReply, type JoinContext } from "../socket/handler.ts";
import { MAX_NAME_BYTES } from "./limits.ts";
import { byteLength } from "./ops.ts";
import { eventOf, type ObjectEntry, type ObjectRef, type ObjectStore, streamOf } from "./store.ts";

/** The push refusal the spec prescribes for this read-only channel. */
export const READ_ONLY_REASON = "writes must go through the server SDK";

/** Parses `after_log_id`: absent -> undefined, a non-negative integer (or digit string) -> it. */
function parseAfter(raw: unknown): number | undefined | "invalid" {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return raw;
  if (typeof raw === "string" && /^\d{1,15}$/.test(raw)) return Number(raw);
  return "invalid";
}

/** Join auth: the app secret (`app_secret`) or a token with `object:read:{type}/{key}`. */
async function authorize(ctx: JoinContext, type: string, key: string): Promise<string | null> {
  const secret = ctx.params.app_secret;
  if (typeof secret === "string" && secret !== "") {
    return constantTimeEqual(ctx.app.secret, secret) ? null : "invalid app_secret";
  }
  const token = ctx.params.auth;
  if (token === undefined || token === null || token === "") {
    return "auth required for durable object channels";
  }
  const principal = await ctx.verify(token);
  if (!principal) return "invalid token";
  const needed = `object:read:${type}/${key}`;
  return principal.can(needed) ? null : `forbidden: missing ${needed}`;
}

/** Builds the `durable` channel handler over `store`. */
export function objectChannel(store: ObjectStore): ChannelHandler {
  return {
    async join(ctx) {
      const colon = ctx.name.indexOf(":");
      const type = ctx.name.slice(0, colon);
      const key = ctx.name.slice(colon + 1);
      if (colon <= 0 || key === "" || byteLength(type) > MAX_NAME_BYTES || byteLength(key) > MAX_NAME_BYTES) {
        return { error: "invalid topic format" };
      }
      const refused = await authorize(ctx, type, key);
      if (refused) return { error: refused };
      const after = parseAfter(ctx.params.after_log_id);
      if (after === "invalid") return { error: "invalid after_log_id" };

      const ref: ObjectRef = { appId: ctx.app.id, appKey: ctx.app.key, type, key };
      const stream = streamOf(ref);
      // Snapshot at N in one synchronous turn; then, in the turn N is published, replay
      // (after, N], reply and subscribe, so live delivery starts exactly at N + 1.
      const snap = store.snapshot(ref);
      await new Promise<void>((resolve) => {
        store.log.whenPublished(stream, snap.log_id, () => {
          try {
            if (after !== undefined && after < snap.log_id) {
              for (const rec of store.log.after<ObjectEntry>(stream, after)) {
                if (rec.position > snap.log_id) break;
                const [event, payload] = eventOf(rec.position, rec.entry);
                ctx.push(event, payload);
              }
            }
            ctx.accept(snap);
            ctx.subscribe();
          } finally {
            resolve();
          }
        });
      });
      return { handleIn: () => errorReply(READ_ONLY_REASON) };
    },
  };
}
