/**
 * `GET /favicon.ico`: Switchboard's icon (three toggles on the playground's blue), so browsers
 * opening the playground or any page of the server get an icon rather than a logged 404. One
 * 32x32 PNG inside an ICO container, embedded here so the single binary serves it too.
 */
import { Hono } from "hono";

const FAVICON_BASE64 =
  "AAABAAEAICAAAAEAIAAGAQAAFgAAAIlQTkcNChoKAAAADUlIRFIAAAAgAAAAIAgGAAAAc3p69AAAAM1JREFUeNpjYEACtskvFIC4H4jPA/F/KuPzULMVGLABoEQCEL+ngcXoGGRHAjbL/9MZJyAH+/sBcMB7cHRA4+X/AOF+BholOKITJgM+BW3zPv6ft/ELRRhkBj47cDoApJkcsO3INzBGBiCzSHbA56//yLIcph/ZESCzhp4DBjwKBjwR0gsPnWyILW6JBRRnQ1ypm1hAcTYcEAcMeBSMZsMhVRsSSh80rQ2JySE0rQ1p5oABjwJ6JsIBb5QOeLN8YDsmA941GxSd04HsngMAbp1Qenh8vvYAAAAASUVORK5CYII=";

/** The icon's bytes (an ICO file). */
export const FAVICON: Uint8Array<ArrayBuffer> = Uint8Array.from(
  atob(FAVICON_BASE64),
  (c) => c.charCodeAt(0),
);

/** Routes serving the icon at `/favicon.ico` (cached for a day). */
export function faviconRoutes(): Hono {
  const routes = new Hono();
  routes.get("/favicon.ico", () =>
    new Response(FAVICON, {
      headers: { "content-type": "image/x-icon", "cache-control": "public, max-age=86400" },
    }));
  return routes;
}
