// The interfaces between the socket layer and a product's channel handler: `JoinContext`,
// `ChannelHandler`, `ChannelInstance`, push replies and push refusals.
import type { App } from "../config/apps.ts";
import type { Principal } from "../auth/principal.ts";
import type { Topic } from "../wire/topic.ts";

/**
 * What a product's channel handler sees of one join. The socket layer owns frames, refs and
 * hub subscriptions; the product owns authorization and payloads.
 *
 * Ordering contract: a handler that replays history must, in one synchronous turn, push the
 * replay (`push`), send the join reply (`accept`) and `subscribe`, so nothing can slip
 * between replay, reply and live events.
 */
export interface JoinContext {
  app: App;
  /** The joined topic, parsed once by the socket layer (`key` is e.g. `pubsub:KEY:news`). */
  topic: Topic;
  params: Record<string, unknown>;
  socketId: string;
  /** Checks a capability token against this app and socket; null when it is invalid. */
  verify(token: unknown): Promise<Principal | null>;
  /** Sends an event to this member only. */
  push(event: string, payload: unknown): void;
  /** Runs `fn` at once; the frames it pushes and sends leave in one network write where the
   * runtime can, instead of one write each (a replay pushes its chunks this way). */
  corked(fn: () => void): void;
  /** Sends the ok join reply now (once). */
  accept(response?: unknown): void;
  /** Starts live delivery of hub broadcasts on `topic` (default: this join's topic). */
  subscribe(topic?: Topic): void;
  /** Stops live delivery of hub broadcasts on `topic`. */
  unsubscribe(topic?: Topic): void;
  /** Server-side kick: sends `phx_close` and ends this join. */
  close(reason?: string): void;
  /** Bytes this socket has queued but not yet written to the network. */
  buffered(): number;
  /**
   * Resolves `true` once the socket's queue is down to `REPLAY_LOW_WATER` bytes, or `false`
   * as soon as this join has ended (left, replaced, socket closed). Long replays wait on it
   * between chunks, so a reading client gets any backlog without the queue growing unbounded.
   */
  drained(): Promise<boolean>;
}

/** Queue size a replay waits for before it pushes its next chunk (1 MiB). */
export const REPLAY_LOW_WATER = 1024 * 1024;

/** Reply to a client push: `undefined` means no reply. */
export type PushReply =
  | { status: "ok"; response?: unknown }
  | { status: "error"; response: { reason: string } & Record<string, unknown> }
  | undefined;

/** A joined channel: handles client pushes and is told when the member goes away. */
export interface ChannelInstance {
  handleIn?(event: string, payload: Record<string, unknown>): PushReply | Promise<PushReply>;
  /** Called once when the member leaves, rejoins, is kicked or the socket closes. */
  terminate?(reason: "leave" | "rejoin" | "close" | "kick"): void;
}

/** A product's entry point for joins of its topics. */
export interface ChannelHandler {
  /** Authorizes and sets up a join; resolves to the instance, or `{ error: reason }`. */
  join(ctx: JoinContext): Promise<ChannelInstance | { error: string }>;
}

/**
 * An error a push handler may throw to answer the push with `{ reason }` instead of crashing
 * the channel: storage refusing a write (`StorageUnavailableError`) is one. Recognised by its
 * shape, so the socket layer imports no storage module.
 */
export interface PushRefusal {
  readonly reason: string;
  readonly refusesPush: true;
}

/** Whether `err` is a `PushRefusal`. */
export function isPushRefusal(err: unknown): err is PushRefusal {
  return err instanceof Error && (err as Partial<PushRefusal>).refusesPush === true &&
    typeof (err as Partial<PushRefusal>).reason === "string";
}

/** Shorthand for an error push reply with the spec's `reason`. */
export function errorReply(reason: string): PushReply {
  return { status: "error", response: { reason } };
}
