/** Moved to `divergence/history.ts` (kept while the replicated store's parts move over). */
export {
  CHAIN_START,
  chainDigest,
  positionDigest,
  WindowFingerprint,
} from "./divergence/history.ts";
