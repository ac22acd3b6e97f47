/** Durable Object limits (documented in docs/objects.md "Limits"). */

/** Longest slot name, in UTF-8 bytes (422 beyond). */
export const MAX_SLOT_NAME_BYTES = 256;
/** Longest `{type}` and `{key}`, each in UTF-8 bytes (422 over HTTP, `invalid topic format` on join). */
export const MAX_NAME_BYTES = 256;
/** Largest slot value as JSON, in bytes, after the op is applied (413 beyond). */
export const MAX_VALUE_BYTES = 256 * 1024;
/** Most operations in one PATCH or transaction (413 beyond). */
export const MAX_OPS_PER_WRITE = 128;
/** Largest object: sum over slots of name bytes + value JSON bytes (413 beyond). */
export const MAX_OBJECT_BYTES = 4 * 1024 * 1024;
/**
 * Why an object type is unusable, or null: a type never holds `/` (the first `/` of a
 * capability's `{type}/{key}` ends it) nor `:` (the first `:` after it in a topic ends it).
 */
export function objectTypeProblem(type: string): string | null {
  return /[/:]/.test(type) ? 'object type must not contain "/" or ":"' : null;
}

export { MAX_BODY_BYTES } from "../limits.ts";
