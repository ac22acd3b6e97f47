/**
 * The Pusher Channels protocol, a second face of the channels product (docs/pusher.md
 * protocol"): the WebSocket at `/app/{key}`, the REST API under `/apps/{id}/` and Pusher-style
 * webhooks, all over the same ChannelService as the Phoenix protocol, so one channel has one
 * serial-ordered stream whichever protocol publishes or subscribes.
 */
import type { ProductDeps, ProductModule } from "../product.ts";
import { PUSHER } from "../http/surfaces.ts";
import type { ChannelService } from "../pubsub/service.ts";
import { pusherRoutes } from "./rest.ts";
import { PusherSockets } from "./endpoint.ts";
import { PusherWebhooks } from "./webhooks.ts";

/** Builds the Pusher face over the channel service. */
export function createPusher(
  deps: ProductDeps,
  svc: ChannelService,
): ProductModule & { webhooks: PusherWebhooks } {
  const sockets = new PusherSockets(deps, svc);
  const webhooks = new PusherWebhooks(deps.apps, deps.env, deps.hub, svc);
  // A cache channel joined with nothing cached (either protocol; rate-limited by the service).
  svc.onCacheMiss((app, channel) => webhooks.enqueue(app, { name: "cache_miss", channel }));
  return {
    routes: pusherRoutes(deps.apps, svc, sockets),
    surface: PUSHER,
    endpoints: [sockets],
    close: () => webhooks.close(),
    webhooks,
  };
}
