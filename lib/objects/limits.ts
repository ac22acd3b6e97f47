/** Durable Object limits (documented in docs/objects.md "Limits" and docs/limits.md). */
import { MAX_ID_BYTES } from "../limits.ts";

/** Longest slot name, in UTF-8 bytes (422 beyond): the storage-key part bound. */
export const MAX_SLOT_NAME_BYTES = MAX_ID_BYTES;
/**
 * Longest `{type}` and `{key}`, each in UTF-8 bytes (422 over HTTP, `invalid topic format` on
 * join): the storage-key part bound.
 */
export const MAX_NAME_BYTES = MAX_ID_BYTES;
/** Largest slot value as JSON, in bytes, after the op is applied (413 beyond). */
export const MAX_VALUE_BYTES = 256 * 1024;
/** Most operations in one PATCH or transaction (413 beyond). */
export const MAX_OPS_PER_WRITE = 128;
/** Largest object: sum over slots of name bytes + value JSON bytes (413 beyond). */
export const MAX_OBJECT_BYTES = 4 * 1024 * 1024;
export { objectTypeProblem } from "../auth/capability.ts";

export { MAX_BODY_BYTES } from "../limits.ts";
