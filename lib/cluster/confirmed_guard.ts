/** Moved to `divergence/guard.ts` (kept while the replicated store's parts move over). */
export * from "./divergence/guard.ts";
