/** Moved to `divergence/rebuild.ts` (kept while the replicated store's parts move over). */
export * from "./divergence/rebuild.ts";
