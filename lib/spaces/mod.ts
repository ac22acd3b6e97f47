import type { ProductDeps, ProductModule } from "../product.ts";
import { spacesChannel } from "./channel.ts";

export type { SpaceMember } from "./channel.ts";

/** Builds the spaces product: the `spaces` relay channel handler (no routes, no storage). */
export function createSpaces(_deps: ProductDeps): ProductModule {
  return { channels: { spaces: spacesChannel() } };
}
