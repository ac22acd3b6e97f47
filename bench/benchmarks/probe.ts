// Checks whether a product's route exists on a running server (404 with no route = pending).
import { APP } from "../lib/proc.ts";

/** True when `method path` answers with anything but a route-not-found 404. */
export async function routeExists(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<boolean> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: {
      "content-type": "application/json",
      "x-app-key": APP.key,
      "x-app-secret": APP.secret,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 404) return true;
  // A product's own 404 (e.g. unset slot) carries its own error body; the catch-all is JSON:API "Not Found".
  return !text.includes('"title":"Not Found"');
}
