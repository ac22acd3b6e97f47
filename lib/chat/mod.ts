import type { ProductDeps, ProductModule } from "../product.ts";

/** Builds the chat product (routes and channel handler). */
export function createChat(_deps: ProductDeps): ProductModule {
  return {};
}
