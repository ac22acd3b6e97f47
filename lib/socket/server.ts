import { type App, type AppRegistry, originAllowed } from "../config/apps.ts";
import { Connection, type SocketDeps, type Transport } from "./connection.ts";
import type { WireFormat } from "../wire/codec.ts";
import { log } from "../log/mod.ts";

/** Path of the WebSocket endpoint (CONTRACT.md). `/socket` alone is accepted too. */
export const SOCKET_PATHS = new Set(["/socket/websocket", "/socket", "/socket/websocket/"]);

/** Idle limit: a socket silent this long is closed (heartbeats count as traffic). */
export const IDLE_TIMEOUT_MS = 60_000;

/** What the runtime adapter learns from an upgrade request before accepting it. */
export interface UpgradeDecision {
  app: App;
  format: WireFormat;
}

/**
 * Owns live connections: decides upgrades (`app_key` check), creates connections and closes
 * idle ones. The runtime adapter does the actual upgrade and forwards messages.
 */
export class SocketServer {
  #apps: AppRegistry;
  #deps: SocketDeps;
  #connections = new Set<Connection>();
  #sweeper: ReturnType<typeof setInterval>;
  #backpressure?: ReturnType<typeof setInterval>;
  #idleMs: number;

  constructor(apps: AppRegistry, deps: SocketDeps, idleMs = IDLE_TIMEOUT_MS) {
    this.#apps = apps;
    this.#deps = deps;
    this.#idleMs = idleMs;
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(50, Math.min(5_000, idleMs / 2)));
    // Do not keep the process alive for the sweepers alone.
    (this.#sweeper as unknown as { unref?: () => void }).unref?.();
  }

  /** Checks every socket's send queue this often when fan-out is runtime-native. */
  static readonly BACKPRESSURE_CHECK_MS = 100;

  /** Whether `url` is the socket endpoint. */
  isSocketPath(url: URL): boolean {
    return SOCKET_PATHS.has(url.pathname);
  }

  /**
   * The app and format for an upgrade; 401 when the app key is missing or unknown, 403 when
   * the request's Origin is not among the app's `allowed_origins` (logged).
   */
  decide(url: URL, origin: string | null): UpgradeDecision | { refuse: 401 | 403 } {
    const key = url.searchParams.get("app_key");
    const app = key ? this.#apps.byKey(key) : undefined;
    if (!app) return { refuse: 401 };
    if (!originAllowed(app, origin)) {
      log.warn("websocket upgrade refused: origin not allowed", { origin: origin?.slice(0, 200), app: app.id });
      return { refuse: 403 };
    }
    return { app, format: url.searchParams.get("format") === "msgpack" ? "msgpack" : "json" };
  }

  /** Creates the connection once the runtime has opened the socket. */
  open(decision: UpgradeDecision, transport: Transport): Connection {
    const conn = new Connection(decision.app, decision.format, transport, this.#deps);
    this.#connections.add(conn);
    return conn;
  }

  /** Forgets a connection whose transport closed. */
  closed(conn: Connection): void {
    conn.onTransportClosed();
    this.#connections.delete(conn);
  }

  /**
   * Hands fan-out to the runtime's native topics (Bun's `server.publish`). Native publishes
   * queue without passing through JS, so a timer closes sockets whose queue went over the
   * bound with 4008 (the runtime's own hard limit, well above it, is only a last resort).
   */
  useNativeTopics(publish: (name: string, data: string | Uint8Array) => void): void {
    this.#deps.hub.useNative({ publish });
    this.#backpressure ??= setInterval(() => {
      for (const conn of this.#connections) conn.overBuffered();
    }, SocketServer.BACKPRESSURE_CHECK_MS);
    (this.#backpressure as unknown as { unref?: () => void }).unref?.();
  }

  /** Number of open connections. */
  get size(): number {
    return this.#connections.size;
  }

  /** Closes every connection (shutdown) and stops the idle sweeper. */
  closeAll(code = 1001, reason = "server shutting down"): void {
    clearInterval(this.#sweeper);
    clearInterval(this.#backpressure);
    for (const conn of this.#connections) conn.close(code, reason);
    this.#connections.clear();
  }

  #sweep() {
    const cutoff = Date.now() - this.#idleMs;
    for (const conn of this.#connections) {
      if (conn.closed) this.#connections.delete(conn);
      else if (conn.lastSeen < cutoff) {
        conn.close(4000, `idle timeout: no message for ${this.#idleMs / 1000} s`);
        this.#connections.delete(conn);
      }
    }
  }
}
