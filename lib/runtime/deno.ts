import { type RunningServer, type ServeOptions, refusedUpgrade } from "./types.ts";
import type { Connection } from "../socket/connection.ts";

/** Serves HTTP and the WebSocket endpoint with `Deno.serve` and `Deno.upgradeWebSocket`. */
export function serve(opts: ServeOptions): Promise<RunningServer> {
  const { sockets } = opts;
  return new Promise((resolve) => {
    const server = Deno.serve({
      port: opts.port,
      hostname: opts.hostname,
      onListen: ({ hostname, port }) =>
        resolve({ hostname, port, stop: () => server.shutdown() }),
    }, (req) => {
      const url = new URL(req.url);
      if (sockets?.isSocketPath(url) && req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        const decision = sockets.decide(url, req.headers.get("origin"));
        if ("refuse" in decision) return refusedUpgrade(decision.refuse);
        const { socket, response } = Deno.upgradeWebSocket(req);
        socket.binaryType = "arraybuffer";
        let conn: Connection | undefined;
        socket.onopen = () => {
          conn = sockets.open(decision, {
            send: (data) => socket.readyState === WebSocket.OPEN && socket.send(data),
            close: (code, reason) => socket.close(code, reason),
            bufferedAmount: () => socket.bufferedAmount,
          });
        };
        socket.onmessage = (e) => {
          conn?.receive(typeof e.data === "string" ? e.data : new Uint8Array(e.data));
        };
        socket.onclose = () => conn && sockets.closed(conn);
        socket.onerror = () => {};
        return response;
      }
      return opts.fetch(req);
    });
  });
}
