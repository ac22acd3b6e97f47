import type { App } from "../config/apps.ts";
import type { StoredEvent } from "../pubsub/service.ts";

/** What the Pusher sockets report for webhooks. */
export interface PusherHooks {
  /** A client event was published by a socket on `channel`. */
  clientEvent?(app: App, channel: string, event: StoredEvent): void;
}
