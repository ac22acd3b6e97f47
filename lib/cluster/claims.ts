/** Moved to `divergence/history.ts` (kept while the replicated store's parts move over). */
export { type Claim, ConfirmedClaims, type Verdict } from "./divergence/history.ts";
