// The Deno runtime adapter: `Deno.serve` and `Deno.upgradeWebSocket`, each socket handed to
// the socket layer as a `Transport`.
import { refusedUpgrade, type RunningServer, type ServeOptions, socketProbe } from "./types.ts";
import type { LiveSocket } from "../socket/endpoint.ts";

/** Serves HTTP and the WebSocket endpoint with `Deno.serve` and `Deno.upgradeWebSocket`. */
export function serve(opts: ServeOptions): Promise<RunningServer> {
  const { sockets } = opts;
  return new Promise((resolve) => {
    const server = Deno.serve({
      port: opts.port,
      hostname: opts.hostname,
      onListen: ({ hostname, port }) => resolve({ hostname, port, stop: () => server.shutdown() }),
    }, (req, info) => {
      // Only upgrades need the parsed URL (plain requests are routed by Hono).
      const upgrade = req.headers.get("upgrade")?.toLowerCase() === "websocket"
        ? sockets?.route(new URL(req.url), req.headers.get("origin"))
        : undefined;
      if (upgrade) {
        if ("refuse" in upgrade) return refusedUpgrade(upgrade.refuse, upgrade.reason);
        const { socket, response } = Deno.upgradeWebSocket(req);
        socket.binaryType = "arraybuffer";
        let conn: LiveSocket | undefined;
        socket.onopen = () => {
          conn = sockets!.open(upgrade, {
            send: (data) => socket.readyState === WebSocket.OPEN && socket.send(data),
            close: (code, reason) => socket.close(code, reason),
            bufferedAmount: () => socket.bufferedAmount,
          });
        };
        socket.onmessage = (e) => {
          conn?.receive(typeof e.data === "string" ? e.data : new Uint8Array(e.data));
        };
        socket.onclose = () => conn && sockets!.closed(conn);
        socket.onerror = () => {};
        return response;
      }
      return socketProbe(req, sockets) ?? opts.fetch(req, info);
    });
  });
}
