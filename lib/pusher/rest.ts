/**
 * The Pusher REST API under `/apps/{app_id}/` (docs/pusher.md "REST API"), with Pusher's signed
 * query authentication, limits and plain-text 4xx bodies.
 */
import { Hono } from "hono";
import type { App, AppRegistry } from "../config/apps.ts";
import type { ChannelService } from "../pubsub/service.ts";

/** What the REST API needs of the Pusher sockets: users signed in with `pusher:signin`. */
export interface PusherUsers {
  /** Closes every Pusher socket of `userId` (signed in) in `app`; returns how many. */
  terminate(app: App, userId: string): number;
  /** Delivers an event to every socket signed in as `userId` (`#server-to-user-{id}`). */
  sendToUser(app: App, userId: string, event: string, data: string): void;
}

/** Builds the Pusher REST routes. */
export function pusherRoutes(_apps: AppRegistry, _svc: ChannelService, _users: PusherUsers): Hono {
  return new Hono();
}
