/**
 * ChatClient (spec "Chat client API"): joins chat threads over a Phoenix socket, as a human
 * (`connect`) or as an agent (`connectAgent`). See docs/chat-live.md.
 */
import { Socket } from "phoenix";
import { type ChatAuthCallback, type ChatAuthOptions, hasTokenSource } from "./chat_auth.ts";
import { ChatAgent } from "./chat_agent.ts";
import {
  ConnectionError,
  type ConnectionErrorListener,
  type SocketWatch,
  transportFor,
  watchSocket,
  type WebSocketConstructor,
} from "./connection.ts";
import { msgpackDecode, msgpackEncode } from "./msgpack_serializer.ts";
import { ChatSession, type SessionHost } from "./chat_session.ts";

export { ActiveRun, ChatView } from "./chat_view.ts";
export { ChatPushError, ChatSession } from "./chat_session.ts";
export { ChatAgent } from "./chat_agent.ts";
export type { ChatMessage, RunInfo, ThreadSnapshot } from "./chat_types.ts";

type Backoff = number | ((tries: number) => number);

/** ChatClient options (defaults in brackets). */
export interface ChatClientOptions {
  /** Socket URL `ws://HOST:PORT/socket` (a trailing `/websocket` is accepted) [same host, or ws://localhost:4000/socket]. */
  endpoint?: string;
  /**
   * Reuse an existing socket: a RealtimeClient-like object `{ socket, socketId? }` (socket is a
   * phoenix Socket; socketId the id from its `connected` frame, needed for tokens when the
   * socket connected before this client), or a phoenix Socket itself.
   */
  realtime?: unknown;
  authEndpoint?: string;
  authCallback?: ChatAuthCallback;
  authHeaders?: Record<string, string>;
  authParams?: Record<string, unknown>;
  /** `msgpack` switches the socket to MessagePack binary frames [JSON]. */
  serializer?: "msgpack" | "json";
  messageFormat?: "msgpack" | "json";
  /** Socket reconnect back-off [phoenix default]. */
  reconnectAfterMs?: Backoff;
  /** Thread rejoin back-off [1 s, 2 s, 5 s, then 10 s]. */
  rejoinAfterMs?: Backoff;
  /** false: the socket is not connected at construction (first connect() opens it) [true]. */
  autoConnect?: boolean;
  /** The WebSocket constructor [the global WebSocket; where there is none (Node 20), the `ws`
   * package, which the client loads itself]. */
  transport?: WebSocketConstructor;
}

function backoff(b: Backoff | undefined): ((tries: number) => number) | undefined {
  if (b === undefined) return undefined;
  return typeof b === "number" ? () => b : b;
}

function defaultEndpoint(): string {
  const loc = (globalThis as { location?: Location }).location;
  if (loc && /^https?:$/.test(loc.protocol)) {
    return `${loc.protocol === "https:" ? "wss" : "ws"}://${loc.host}/socket`;
  }
  return "ws://localhost:4000/socket";
}

/** The chat client SDK. */
export class ChatClient implements SessionHost {
  readonly appKey: string;
  /** The phoenix Socket in use (own or reused). */
  readonly socket: Socket;
  readonly auth: ChatAuthOptions;
  #socketId: string | null = null;
  /** Connections (`connected` frames) seen: the generation a token's socket id belongs to. */
  #connection = 0;
  #waiters: {
    after: number;
    resolve: (v: { socketId: string; connection: number }) => void;
    reject: (err: Error) => void;
  }[] = [];
  #watch: SocketWatch;
  #errorListeners = new Set<ConnectionErrorListener>();
  #rejoin: (tries: number) => number;
  #own: boolean;

  constructor(appKey: string, options: ChatClientOptions = {}) {
    if (typeof appKey !== "string" || appKey === "") {
      throw new Error("ChatClient needs an appKey string.");
    }
    this.appKey = appKey;
    this.auth = {
      authEndpoint: options.authEndpoint,
      authCallback: options.authCallback,
      authHeaders: options.authHeaders,
      authParams: options.authParams,
    };
    this.#rejoin = backoff(options.rejoinAfterMs) ?? ((t) => [1000, 2000, 5000][t - 1] ?? 10_000);
    const reused = options.realtime as { socket?: Socket; socketId?: unknown } | undefined;
    if (reused) {
      this.socket = reused.socket ?? (reused as unknown as Socket);
      this.#own = false;
      // The connected frame may already have passed: take the id the realtime client saw.
      if (typeof reused.socketId === "string") {
        this.#socketId = reused.socketId;
        this.#connection = 1;
      } else if (this.socket.isConnected() && !hasTokenSource(this.auth)) this.#connection = 1;
    } else {
      const msgpack = (options.serializer ?? options.messageFormat) === "msgpack";
      const endpoint = (options.endpoint ?? defaultEndpoint()).replace(/\/websocket\/?$/, "");
      this.socket = new Socket(
        endpoint,
        {
          transport: transportFor(options.transport),
          params: msgpack ? { app_key: appKey, format: "msgpack" } : { app_key: appKey },
          ...(msgpack
            ? { encode: msgpackEncode, decode: msgpackDecode, binaryType: "arraybuffer" }
            : {}),
          ...(options.reconnectAfterMs !== undefined
            ? { reconnectAfterMs: backoff(options.reconnectAfterMs) }
            : {}),
          rejoinAfterMs: this.#rejoin,
        } as ConstructorParameters<typeof Socket>[1],
      );
      this.#own = true;
    }
    // The server's first frame on every connection carries the socket id tokens bind to.
    this.socket.onMessage(
      (message) => {
        const msg = message as { topic: string; event: string; payload: { socket_id?: string } };
        if (msg.topic !== "phoenix" || msg.event !== "connected") return;
        this.#socketId = String(msg.payload?.socket_id ?? "");
        this.#connection++;
        const due = this.#waiters.filter((w) => this.#connection > w.after);
        this.#waiters = this.#waiters.filter((w) => this.#connection <= w.after);
        for (const w of due) w.resolve({ socketId: this.#socketId, connection: this.#connection });
      },
    );
    this.#watch = watchSocket(this.socket);
    this.#watch.onError((err) => this.#failed(err));
    if (this.#own && options.autoConnect !== false) this.socket.connect();
  }

  /**
   * Listens for connection errors: a refusal (`error.fatal`: `unknown app key`, `origin not
   * allowed`, no WebSocket in this runtime; no more reconnects) or a retried failure. Returns
   * the unsubscribe function. Without a listener, a refusal is printed with `console.error`.
   */
  on(event: "error", listener: ConnectionErrorListener): () => void {
    if (event !== "error") throw new TypeError(`ChatClient.on: unknown event ${event}`);
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  /** The refusal that stopped the connection (until the next `reconnect()`), else null. */
  get error(): ConnectionError | null {
    return this.#watch.refusal;
  }

  /** Connects again after a refusal or `disconnect()`. */
  reconnect(): void {
    this.#watch.retry();
    this.socket.connect();
  }

  #failed(err: ConnectionError): void {
    if (err.fatal) { for (const w of this.#waiters.splice(0)) w.reject(err); }
    for (const listener of [...this.#errorListeners]) {
      try {
        listener(err);
      } catch (e) {
        console.error("switchboard: an error listener threw:", e);
      }
    }
    // A realtime client sharing the socket reports it already.
    if (err.fatal && this.#errorListeners.size === 0 && this.#own) {
      console.error(`switchboard: ${err.message}`);
    }
  }

  /** The socket id of the current connection (null before the first `connected` frame). */
  get socketId(): string | null {
    return this.#socketId;
  }

  /** How many connections (`connected` frames) this client has seen (not a stream epoch). */
  get connection(): number {
    return this.#connection;
  }

  /** SessionHost: waits for a connection numbered above `afterConnection`. */
  socketIdAfter(afterConnection: number): Promise<{ socketId: string; connection: number }> {
    if (this.#connection > afterConnection) {
      return Promise.resolve({ socketId: this.#socketId ?? "", connection: this.#connection });
    }
    if (this.#watch.refusal) return Promise.reject(this.#watch.refusal);
    return new Promise((resolve, reject) =>
      this.#waiters.push({ after: afterConnection, resolve, reject })
    );
  }

  /** SessionHost: the rejoin delay. */
  rejoinDelay(tries: number): number {
    return this.#rejoin(tries);
  }

  /** Joins a thread as a human; resolves once the snapshot is applied. */
  async connect(
    threadId: string,
    opts: { clientId: string; afterLogId?: number },
  ): Promise<ChatSession> {
    if (!opts || typeof opts.clientId !== "string" || opts.clientId === "") {
      throw new Error("ChatClient.connect needs { clientId: string }.");
    }
    const session = new ChatSession(
      this,
      threadId,
      { kind: "client", clientId: opts.clientId },
      opts.afterLogId,
    );
    return await session.open();
  }

  /** Joins a thread as an agent with the app secret (server-side code only). */
  async connectAgent(
    threadId: string,
    opts: { secret: string; agentId: string; afterLogId?: number },
  ): Promise<ChatAgent> {
    const session = new ChatSession(
      this,
      threadId,
      { kind: "agent", secret: opts.secret, agentId: opts.agentId },
      opts.afterLogId,
    );
    const agent = new ChatAgent(session);
    await session.open();
    return agent;
  }

  /** Closes the socket when this client created it. */
  disconnect(): void {
    if (this.#own) this.socket.disconnect();
  }
}
