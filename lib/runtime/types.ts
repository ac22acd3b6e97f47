// What every runtime adapter takes and returns (`ServeOptions`, `RunningServer`) and the
// response of a refused upgrade.
import type { SocketServer } from "../socket/server.ts";

/** What `serve` needs: the HTTP handler and the socket server for upgrades. */
export interface ServeOptions {
  port: number;
  hostname: string;
  /** `conn` is the runtime's connection info (Deno's `ServeHandlerInfo`, Bun's server), which
   * the console reads the peer address from (`lib/console/peer.ts`). */
  fetch: (req: Request, conn?: unknown) => Response | Promise<Response>;
  /** The WebSocket endpoint; absent for a plain HTTP listener (the metrics port). */
  sockets?: SocketServer;
}

/** A listening server. */
export interface RunningServer {
  hostname: string;
  port: number;
  /** Stops accepting connections and resolves once in-flight requests have been answered
   * (bounded) and the listener is closed. */
  stop(): Promise<void>;
}

/** Response for a refused upgrade: 401 unknown or missing app_key (docs/protocol.md
 * "Connecting"), 403 an origin outside the app's `allowed_origins`, 503 an app at
 * `max_connections`; `reason` says which. */
export function refusedUpgrade(status: 401 | 403 | 503, reason?: string): Response {
  const title = { 401: "Unauthorized", 403: "Forbidden", 503: "Service Unavailable" }[status];
  const error = { status: String(status), title, ...(reason ? { detail: reason } : {}) };
  return new Response(
    JSON.stringify({ ...(reason ? { error: reason, reason } : {}), errors: [error] }),
    { status, headers: { "content-type": "application/json" } },
  );
}

/** A plain GET of the socket URL (a client asking why its upgrade failed): the socket
 * server's answer, or `undefined` for every other request (routed by Hono). */
export function socketProbe(req: Request, sockets: SocketServer | undefined): Response | undefined {
  if (!sockets || req.method !== "GET" || !req.url.includes("/socket")) return undefined;
  return sockets.probe(new URL(req.url), req.headers.get("origin"));
}
