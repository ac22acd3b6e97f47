// The socket server: routes upgrades to the endpoint serving the path (Phoenix V2 built in),
// counts and sweeps live sockets of every protocol, checks send queues.
import { type App, type AppRegistry, originAllowed } from "../config/apps.ts";
import { Connection, type SocketDeps, type Transport } from "./connection.ts";
import type { LiveSocket, SocketEndpoint } from "./endpoint.ts";
import type { WireFormat } from "../wire/codec.ts";
import { log } from "../log/mod.ts";
import { tap, tapActive } from "../debug/tap.ts";

/** Path of the WebSocket endpoint (docs/protocol.md "Connecting"). `/socket` alone is accepted
 * too. */
export const SOCKET_PATHS = new Set(["/socket/websocket", "/socket", "/socket/websocket/"]);

/** Idle limit: a socket silent this long is closed (heartbeats count as traffic). */
export const IDLE_TIMEOUT_MS = 60_000;

/** An accepted upgrade: the endpoint that will own the socket and what it decided. */
export interface AcceptedUpgrade {
  endpoint: SocketEndpoint;
  accepted: unknown;
  /** The upgrade's Origin header (the debug tap shows it). */
  origin?: string | null;
}

/**
 * Owns live sockets of every protocol: routes upgrades to the endpoint serving the path,
 * creates sockets, sweeps idle ones and checks send queues. Phoenix V2 (`/socket/websocket`)
 * is built in; protocol modules add theirs with `addEndpoint`. The runtime adapter does the
 * actual upgrade and forwards messages.
 */
export class SocketServer {
  #sockets = new Set<LiveSocket>();
  /** Live sockets per app id, for `max_connections`. */
  #perApp = new Map<string, number>();
  #endpoints: SocketEndpoint[] = [];
  #sweeper: ReturnType<typeof setInterval>;
  #backpressure?: ReturnType<typeof setInterval>;
  #hub: SocketDeps["hub"];
  #idleMs: number;
  #apps: AppRegistry;

  constructor(apps: AppRegistry, deps: SocketDeps, idleMs = IDLE_TIMEOUT_MS) {
    this.#apps = apps;
    this.#hub = deps.hub;
    this.#idleMs = idleMs;
    this.#endpoints.push(phoenixEndpoint(apps, deps));
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(50, Math.min(5_000, idleMs / 2)));
    // Do not keep the process alive for the sweepers alone.
    (this.#sweeper as unknown as { unref?: () => void }).unref?.();
  }

  /** Tells the debug tap a socket of an app opened or closed (protocol, origin, socket id). */
  #tapConnection(socket: LiveSocket, what: "opened" | "closed", origin?: string | null) {
    const app = this.#apps.byId(socket.appId!);
    if (!app) return;
    const protocol = socket instanceof Connection ? "phoenix" : "pusher";
    const socketId = (socket as LiveSocket & { socketId?: string }).socketId;
    tap(app.key, "connection", { what, socket_id: socketId, protocol, origin: origin ?? null });
  }

  /** Checks every socket's send queue this often when fan-out is runtime-native. */
  static readonly BACKPRESSURE_CHECK_MS = 100;

  /** Serves another WebSocket protocol. */
  addEndpoint(endpoint: SocketEndpoint): void {
    this.#endpoints.push(endpoint);
  }

  /**
   * The endpoint's decision for an upgrade request to `url`, or `undefined` when no endpoint
   * serves the path (the request is then ordinary HTTP).
   */
  route(
    url: URL,
    origin: string | null,
  ): AcceptedUpgrade | { refuse: 401 | 403 | 503; reason?: string } | undefined {
    const endpoint = this.#endpoints.find((e) => e.matches(url));
    if (!endpoint) return undefined;
    const full = (app: App) => {
      const max = app.max_connections ?? 0;
      return max > 0 && (this.#perApp.get(app.id) ?? 0) >= max;
    };
    const decision = endpoint.decide(url, origin, full);
    return "refuse" in decision ? decision : { endpoint, accepted: decision.accept, origin };
  }

  /**
   * The answer to a plain HTTP GET (no upgrade) of the Phoenix socket URL, or `undefined` for
   * any other path: the decision an upgrade with the same query and Origin would get, as JSON
   * any page can read (`Access-Control-Allow-Origin: *`), since a browser cannot read an
   * upgrade's status. A refusal answers its status and `{ error, reason }`; an upgrade that
   * would be taken answers 426 (docs/protocol.md "Refused connections").
   */
  probe(url: URL, origin: string | null): Response | undefined {
    if (!SOCKET_PATHS.has(url.pathname)) return undefined;
    const decision = this.route(url, origin);
    if (!decision) return undefined;
    const refusal = "refuse" in decision ? decision : undefined;
    const status = refusal?.refuse ?? 426;
    const reason = refusal ? refusal.reason ?? "refused" : "websocket upgrade required";
    return new Response(JSON.stringify({ error: reason, reason, status }), {
      status,
      headers: {
        "content-type": "application/json",
        "access-control-allow-origin": "*",
        "cache-control": "no-store",
      },
    });
  }

  /** Creates the socket once the runtime has opened it. */
  open(upgrade: AcceptedUpgrade, transport: Transport): LiveSocket {
    const socket = upgrade.endpoint.open(upgrade.accepted, transport);
    this.#sockets.add(socket);
    if (socket.appId !== undefined) {
      this.#perApp.set(socket.appId, (this.#perApp.get(socket.appId) ?? 0) + 1);
    }
    if (tapActive) this.#tapConnection(socket, "opened", upgrade.origin);
    return socket;
  }

  /** Forgets a socket whose transport closed. */
  closed(socket: LiveSocket): void {
    socket.onTransportClosed();
    this.#forget(socket);
  }

  #forget(socket: LiveSocket) {
    if (!this.#sockets.delete(socket) || socket.appId === undefined) return;
    if (tapActive) this.#tapConnection(socket, "closed");
    const left = this.#perApp.get(socket.appId)! - 1;
    if (left > 0) this.#perApp.set(socket.appId, left);
    else this.#perApp.delete(socket.appId);
  }

  /**
   * Hands fan-out to the runtime's native topics (Bun's `server.publish`). Native publishes
   * queue without passing through JS, so a timer closes sockets whose queue went over the
   * bound with 4008 (the runtime's own hard limit, well above it, is only a last resort).
   */
  useNativeTopics(publish: (name: string, data: string | Uint8Array) => void): void {
    this.#hub.useNative({ publish });
    this.#backpressure ??= setInterval(() => {
      for (const socket of this.#sockets) socket.overBuffered();
    }, SocketServer.BACKPRESSURE_CHECK_MS);
    (this.#backpressure as unknown as { unref?: () => void }).unref?.();
  }

  /** Number of open sockets. */
  get size(): number {
    return this.#sockets.size;
  }

  /**
   * Closes every socket as at shutdown (1001, Pusher 4200: clients reconnect at once) without
   * stopping the server: a clustered node that rebuilt its store does it, so clients rejoin
   * and resume from the rebuilt store (or another node). Returns how many were open.
   */
  reconnectAll(): number {
    const open = [...this.#sockets];
    for (const socket of open) socket.goingAway();
    return open.length;
  }

  /**
   * Closes every socket (shutdown) and stops the sweepers. Resolves once the runtime reported
   * every socket closed, or after `maxWaitMs`, so close frames (and their codes) leave before
   * the listener goes down.
   */
  async closeAll(maxWaitMs = 1000): Promise<void> {
    clearInterval(this.#sweeper);
    clearInterval(this.#backpressure);
    const closing = [...this.#sockets];
    for (const socket of closing) socket.goingAway();
    const deadline = Date.now() + maxWaitMs;
    while (closing.some((s) => this.#sockets.has(s)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    this.#sockets.clear();
    this.#perApp.clear();
  }

  #sweep() {
    const now = Date.now();
    for (const socket of this.#sockets) {
      if (!socket.closed) socket.sweep(now, this.#idleMs);
      if (socket.closed) this.#forget(socket);
    }
  }
}

/**
 * A warning at most once per `everyMs` (a client retrying a wrong key must not flood the log):
 * the first refusal is logged at once, later ones within the window are counted and the count
 * rides on the next logged line as `suppressed`.
 */
export class RateLimitedLog {
  #last = -Infinity;
  #suppressed = 0;
  constructor(readonly everyMs: number) {}

  /** Logs `msg` with `fields` unless one was logged less than `everyMs` ago. */
  warn(msg: string, fields: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.#last < this.everyMs) {
      this.#suppressed++;
      return;
    }
    this.#last = now;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    log.warn(msg, suppressed > 0 ? { ...fields, suppressed } : fields);
  }
}

/** Refused upgrades for an unknown or missing app key: one line per 10 s at most. */
const unknownKeyLog = new RateLimitedLog(10_000);

/** The built-in Phoenix V2 endpoint: `app_key` and Origin checks, then a `Connection`. */
function phoenixEndpoint(apps: AppRegistry, deps: SocketDeps): SocketEndpoint {
  return {
    matches: (url) => SOCKET_PATHS.has(url.pathname),
    decide(url, origin, full) {
      const key = url.searchParams.get("app_key");
      const app = key ? apps.byKey(key) : undefined;
      if (!app) {
        const reason = key ? "unknown app key" : "missing app_key";
        unknownKeyLog.warn(`websocket upgrade refused: ${reason}`, {
          app_key: key?.slice(0, 64) ?? null,
          origin: origin?.slice(0, 200) ?? null,
        });
        return { refuse: 401, reason };
      }
      if (!originAllowed(app, origin)) {
        log.warn("websocket upgrade refused: origin not allowed", {
          origin: origin?.slice(0, 200),
          app: app.id,
        });
        return { refuse: 403, reason: "origin not allowed" };
      }
      if (full(app)) {
        log.warn("websocket upgrade refused: app over max_connections", { app: app.id });
        return { refuse: 503, reason: "app over max_connections" };
      }
      const format: WireFormat = url.searchParams.get("format") === "msgpack" ? "msgpack" : "json";
      return { accept: { app, format } };
    },
    open(accepted, transport) {
      const { app, format } = accepted as { app: App; format: WireFormat };
      return new Connection(app, format, transport, deps);
    },
  };
}
