import type { SocketServer } from "../socket/server.ts";

/** What `serve` needs: the HTTP handler and the socket server for upgrades. */
export interface ServeOptions {
  port: number;
  hostname: string;
  fetch: (req: Request) => Response | Promise<Response>;
  sockets: SocketServer;
}

/** A listening server. */
export interface RunningServer {
  hostname: string;
  port: number;
  /** Stops accepting connections and resolves once in-flight requests have been answered
   * (bounded) and the listener is closed. */
  stop(): Promise<void>;
}

/** Response for a refused upgrade: unknown or missing app_key (CONTRACT.md). */
export function unauthorizedUpgrade(): Response {
  return new Response(JSON.stringify({ errors: [{ status: "401", title: "Unauthorized" }] }), {
    status: 401,
    headers: { "content-type": "application/json" },
  });
}
