import type { ProductDeps, ProductModule } from "../product.ts";

/** Builds the pubsub product (routes and channel handler). */
export function createPubsub(_deps: ProductDeps): ProductModule {
  return {};
}
