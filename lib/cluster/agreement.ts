/** Moved to `divergence/agreement.ts` (kept while the replicated store's parts move over). */
export { PeerAgreement } from "./divergence/agreement.ts";
