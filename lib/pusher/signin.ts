/** `pusher:signin`: the user a socket signs in as, once the signature over its `user_data` checks. */
import type { App } from "../config/apps.ts";
import { idProblem } from "../limits.ts";
import { validUserAuth } from "./signature.ts";

/**
 * The user id and `user_data` of a `pusher:signin` message's `data` on socket `socketId`, or
 * why it is refused (the socket is then closed with 4009, as Pusher does).
 */
export function checkSignin(
  app: App,
  socketId: string,
  data: Record<string, unknown>,
): { id: string; userData: string } | { error: string } {
  const userData = data.user_data;
  let id: unknown;
  try {
    id = typeof userData === "string" ? (JSON.parse(userData) as { id?: unknown }).id : undefined;
  } catch { /* refused below */ }
  if (typeof id !== "string" || id === "" || idProblem("id", id)) {
    return { error: "Invalid user_data: a JSON object with a string id" };
  }
  if (!validUserAuth(app, socketId, data.auth, userData as string)) {
    return { error: "Invalid signature for pusher:signin" };
  }
  return { id, userData: userData as string };
}
