/**
 * The socket server serves one or more WebSocket protocols, each at its own paths: Phoenix V2
 * at `/socket/websocket` (built in) and, registered by their modules, others such as the
 * Pusher protocol at `/app/{key}`. The server only tracks live sockets, sweeps idle ones and
 * checks backpressure; the protocol owns frames, handshakes and its own idle rules.
 */
import type { App } from "../config/apps.ts";
import type { Transport } from "./transport.ts";

/** A live socket of any protocol, as the socket server tracks it. */
export interface LiveSocket {
  readonly closed: boolean;
  /** The app the socket belongs to (undefined for a socket refused right after opening). */
  readonly appId: string | undefined;
  /** Handles one inbound WebSocket message. Never throws. */
  receive(data: string | Uint8Array): void;
  /** Called by the runtime when the peer went away. */
  onTransportClosed(): void;
  /** Closes the socket with a code and reason. */
  close(code?: number, reason?: string): void;
  /** Server shutdown: close the way the protocol tells clients to come back later. */
  goingAway(): void;
  /** Closes the socket when its send queue is over the bound; returns whether it did. */
  overBuffered(): boolean;
  /** Periodic idle check: `idleMs` is the server's idle limit (`--idle-timeout`). */
  sweep(now: number, idleMs: number): void;
}

/** Whether an upgrade is taken (with what `open` needs) or refused with an HTTP status and,
 * where the endpoint says why, a reason (the refusal's JSON body carries it). */
export type UpgradeDecision = { accept: unknown } | { refuse: 401 | 403 | 503; reason?: string };

/** One WebSocket protocol served at some paths. */
export interface SocketEndpoint {
  /** Whether this endpoint serves `url`'s path. */
  matches(url: URL): boolean;
  /**
   * Decides an upgrade request before the runtime accepts it. `full(app)` says whether the app
   * is at its `max_connections` (live sockets of every protocol).
   */
  decide(url: URL, origin: string | null, full: (app: App) => boolean): UpgradeDecision;
  /** Creates the socket once the runtime has opened it. */
  open(accepted: unknown, transport: Transport): LiveSocket;
}
