/** Moved to `divergence/unsure.ts` (kept while the replicated store's parts move over). */
export * from "./divergence/unsure.ts";
