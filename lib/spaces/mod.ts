import type { ProductDeps, ProductModule } from "../product.ts";

/** Builds the spaces product (routes and channel handler). */
export function createSpaces(_deps: ProductDeps): ProductModule {
  return {};
}
