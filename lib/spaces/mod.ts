// The Spaces product's entry: the `spaces` relay channel handler and its members, shared
// between nodes in a cluster (`createSpaces`).
import type { ProductDeps, ProductModule } from "../product.ts";
import { PresenceRegistry } from "../pubsub/presence.ts";
import { spaceMember, spacesChannel } from "./channel.ts";

export type { SpaceMember } from "./channel.ts";

/** Builds the spaces product: the `spaces` relay channel handler (no routes, no storage) and
 * its members, shared between nodes in a cluster. */
export function createSpaces(deps: ProductDeps): ProductModule {
  const members = new PresenceRegistry(deps.config.nodeId);
  // A member entering or leaving, through this node or another, is told the same way.
  members.observe((topic, socketId, entered, info) => {
    deps.hub.publish(topic, entered ? "member:enter" : "member:leave", spaceMember(socketId, info));
  });
  return {
    channels: { spaces: spacesChannel(deps.hub, members) },
    presence: { name: "spaces", registry: members },
  };
}
