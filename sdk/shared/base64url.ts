/** Base64url (RFC 4648 §5, no padding) over bytes and UTF-8 text, with strict decoding. */

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder("utf-8", { fatal: true });
const CANONICAL = /^[A-Za-z0-9_-]*$/;

/** Encodes bytes, or a string as UTF-8, to unpadded base64url. */
export function base64urlEncode(input: Uint8Array | string): string {
  const bytes = typeof input === "string" ? ENCODER.encode(input) : input;
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * Decodes unpadded base64url to bytes; null when the text is not canonical base64url
 * (bad characters, impossible length, or non-zero trailing bits).
 */
export function base64urlDecode(text: string): Uint8Array | null {
  if (!CANONICAL.test(text) || text.length % 4 === 1) return null;
  let binary: string;
  try {
    binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  // Reject non-canonical encodings so one value has exactly one textual form.
  return base64urlEncode(bytes) === text ? bytes : null;
}

/** Decodes unpadded base64url to UTF-8 text; null when either layer is invalid. */
export function base64urlDecodeText(text: string): string | null {
  const bytes = base64urlDecode(text);
  if (!bytes) return null;
  try {
    return DECODER.decode(bytes);
  } catch {
    return null;
  }
}
