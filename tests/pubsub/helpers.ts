// Shared helpers of the pubsub/spaces tests: token minting and HTTP calls with credentials.
import { Switchboard } from "../../sdk/server/mod.ts";
import type { TestApp, TestServer } from "../helpers/server.ts";

/** A server SDK for one app of a test server. */
export function sdkFor(server: TestServer, app: TestApp = server.apps[0]): Switchboard {
  return new Switchboard({
    baseUrl: server.baseUrl,
    appId: app.id,
    appKey: app.key,
    appSecret: app.secret,
  });
}

/** Fast-path token for `socketId` with `caps`. */
export function token(
  server: TestServer,
  app: TestApp,
  socketId: string,
  caps: string[],
  clientId?: string,
) {
  return sdkFor(server, app).mintFastToken(socketId, caps, clientId);
}

/** Calls the HTTP API with the app's credentials; resolves with status and parsed body. */
export async function call(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  app: TestApp = server.apps[0],
): Promise<{ status: number; body: any }> {
  const res = await fetch(server.baseUrl + path, {
    method,
    headers: server.headers(app),
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    // A request the server never answers fails the test instead of hanging it.
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Triggers one event; asserts nothing. */
export function trigger(
  server: TestServer,
  channel: string,
  event: string,
  data: unknown,
  app = server.apps[0],
) {
  return call(server, "POST", `/api/apps/${app.id}/trigger`, { channel, event, data }, app);
}
