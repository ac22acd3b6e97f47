/**
 * Fast-path tokens for the server: minting and verification live in sdk/shared/fast_token.ts,
 * shared with the server SDK so a token minted by either is byte-for-byte the same.
 */
export {
  constantTimeEqual,
  type FastTokenPayload,
  mintFastToken,
  verifyFastToken,
} from "../../sdk/shared/fast_token.ts";
