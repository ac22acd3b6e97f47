// The channels (PubSub) product's entry: builds the channel service, its backend routes and
// the `pubsub` channel handler, and exposes the service the Pusher face shares (`createPubsub`).
import type { ProductDeps, ProductModule } from "../product.ts";
import { pubsubChannel } from "./channel.ts";
import { pubsubRoutes } from "./routes.ts";
import { ChannelService } from "./service.ts";

export { ChannelService } from "./service.ts";
export type { HistoryItem, StoredEvent } from "./service.ts";
export { channelKind, validChannelName } from "./names.ts";

/**
 * Builds the pubsub product: the backend routes and the `pubsub` channel handler, plus the
 * service, which the Pusher protocol face shares.
 */
export function createPubsub(deps: ProductDeps): ProductModule & { service: ChannelService } {
  const svc = new ChannelService(deps.openLog("channels", { staged: true }), deps.hub, deps.config);
  return {
    routes: pubsubRoutes(deps.apps, svc),
    channels: { pubsub: pubsubChannel(svc) },
    presence: { name: "pubsub", registry: svc.presence },
    occupancy: svc.occupancy,
    service: svc,
  };
}
