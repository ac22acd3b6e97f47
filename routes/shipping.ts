import type { ProductDeps, ProductModule } from "../lib/product.ts";

/** Routes for what a front-end developer touches first: the browser SDK and the playground. */
export function createShipping(_deps: ProductDeps): ProductModule {
  return {};
}
