// The Bun runtime adapter: `Bun.serve` for HTTP and WebSocket upgrades, each socket handed to
// the socket layer as a `Transport`, fan-out through Bun's native topics.
import { refusedUpgrade, type RunningServer, type ServeOptions, socketProbe } from "./types.ts";
import type { LiveSocket } from "../socket/endpoint.ts";
import type { AcceptedUpgrade } from "../socket/server.ts";
import { MAX_BUFFERED_BYTES } from "../socket/connection.ts";

// Bun's globals are not in Deno's type environment; this module only runs under Bun.
// deno-lint-ignore no-explicit-any
declare const Bun: any;

interface SocketData {
  upgrade: AcceptedUpgrade;
  conn?: LiveSocket;
}
// deno-lint-ignore no-explicit-any
type BunSocket = any;

/** Serves HTTP and the WebSocket endpoint with `Bun.serve` and its native WebSocket server. */
export function serve(opts: ServeOptions): Promise<RunningServer> {
  const { sockets } = opts;
  const server = Bun.serve({
    port: opts.port,
    hostname: opts.hostname,
    // deno-lint-ignore no-explicit-any
    fetch(req: Request, srv: any) {
      // Only upgrades need the parsed URL (plain requests are routed by Hono). An upgrade is a
      // GET: other methods skip the header lookup (every durable write is a PUT, PATCH or POST).
      const upgrade =
        req.method === "GET" && req.headers.get("upgrade")?.toLowerCase() === "websocket"
          ? sockets?.route(new URL(req.url), req.headers.get("origin"))
          : undefined;
      if (upgrade) {
        if ("refuse" in upgrade) return refusedUpgrade(upgrade.refuse, upgrade.reason);
        if (srv.upgrade(req, { data: { upgrade } satisfies SocketData })) return undefined;
        return new Response("WebSocket upgrade failed", { status: 400 });
      }
      return socketProbe(req, sockets) ?? opts.fetch(req, srv);
    },
    websocket: {
      maxPayloadLength: 2 * 1024 * 1024,
      perMessageDeflate: false,
      // Native fan-out queues in uWS, not in JS. The socket server closes a subscriber past
      // MAX_BUFFERED_BYTES with 4008 and a reason (docs/design.md, "Backpressure"); this hard
      // limit, four times higher, only catches a burst between two of its checks (uWS then closes
      // 1006).
      backpressureLimit: 4 * MAX_BUFFERED_BYTES,
      closeOnBackpressureLimit: true,
      open(ws: BunSocket) {
        const data = ws.data as SocketData;
        data.conn = sockets!.open(data.upgrade, {
          send: (bytes) => ws.send(bytes),
          close: (code, reason) => ws.close(code, reason),
          bufferedAmount: () => ws.getBufferedAmount(),
          cork: (fn) => ws.cork(fn),
          subscribe: (name) => ws.subscribe(name),
          unsubscribe: (name) => ws.unsubscribe(name),
          publish: (name, bytes) => ws.publish(name, bytes),
        });
      },
      message(ws: BunSocket, message: string | Uint8Array) {
        (ws.data as SocketData).conn?.receive(
          typeof message === "string" ? message : new Uint8Array(message),
        );
      },
      close(ws: BunSocket) {
        const conn = (ws.data as SocketData).conn;
        if (conn) sockets!.closed(conn);
      },
    },
  });
  sockets?.useNativeTopics((name, bytes) => server.publish(name, bytes));
  return Promise.resolve({
    hostname: server.hostname,
    port: server.port,
    stop: async () => {
      // Stop accepting and let in-flight requests finish, then drop idle keep-alive sockets.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        server.stop(false),
        new Promise((resolve) => (timer = setTimeout(resolve, 10_000))),
      ]);
      clearTimeout(timer);
      await server.stop(true);
    },
  });
}
