import type { ProductDeps, ProductModule } from "../product.ts";

/** Builds the objects product (routes and channel handler). */
export function createObjects(_deps: ProductDeps): ProductModule {
  return {};
}
