/** Base64url for the server: the code lives in sdk/shared/base64url.ts (shared with the SDK). */
export {
  base64urlDecode,
  base64urlDecodeText,
  base64urlEncode,
} from "../../sdk/shared/base64url.ts";
