/**
 * Chat webhook signatures for the server: the code lives in sdk/shared/webhook_signature.ts,
 * shared with the server SDK (`verifyWebhook`), so signing and verifying read one definition.
 */
export { signWebhook, verifyWebhook } from "../../../sdk/shared/webhook_signature.ts";
