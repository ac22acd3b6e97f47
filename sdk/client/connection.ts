/**
 * Connection failures, made loud (docs/protocol.md "Refused connections"): a socket whose
 * connection closes before it ever opened asks the same URL over plain HTTP why (a browser
 * cannot read an upgrade's status). A refusal (401 unknown app key, 403 origin not allowed)
 * stops the reconnect loop and reaches every listener as a `ConnectionError`; an app at its
 * connection limit (503) or an unreachable server is reported and retried. Also finds a
 * WebSocket where the runtime has none (Node 20): the optional `ws` package.
 */
import type { Socket } from "phoenix";

/** A WebSocket class, as the global `WebSocket` or the `ws` package's export. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => unknown;

/** Why a connection failed. `fatal`: the client stopped reconnecting (a refusal). */
export class ConnectionError extends Error {
  /** The server's reason (`unknown app key`, `origin not allowed`, ...) or what went wrong. */
  readonly reason: string;
  /** The HTTP status of the refusal (401, 403, 503), null when the server gave none. */
  readonly status: number | null;
  /** True when the client gave up (until `connect()` is called again). */
  readonly fatal: boolean;

  /** An error with the server's `reason` (`status` null when there was no answer). */
  constructor(reason: string, status: number | null, fatal: boolean, message = reason) {
    super(message);
    this.name = "ConnectionError";
    this.reason = reason;
    this.status = status;
    this.fatal = fatal;
  }
}

/** A listener of connection errors. */
export type ConnectionErrorListener = (error: ConnectionError) => void;

const watches = new WeakMap<object, SocketWatch>();

/** The parts of phoenix's (internal) connection object the watch reads. */
interface PhoenixConnection {
  closeHandled?: boolean;
  transport?: {
    readyState: number;
    onclose?: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null;
  };
}

/**
 * Watches one phoenix Socket for failed connections (shared by every client on the socket:
 * `SocketWatch.of(socket)`). See the module comment.
 */
export class SocketWatch {
  /** The refusal that stopped the socket, until the next `connect()`. */
  refusal: ConnectionError | null = null;
  #socket: Socket;
  #listeners = new Set<ConnectionErrorListener>();
  #opened = false;
  /** Whether this run of failed attempts was already asked about (once per run). */
  #asked = false;
  #ready: Promise<void> = Promise.resolve();
  #loading = false;
  /** Whether this run of failures already reported the server unreachable (once per run). */
  #reportedUnreachable = false;

  /** The watch of `socket`, created on first use. */
  static of(socket: Socket): SocketWatch {
    let watch = watches.get(socket);
    if (!watch) watches.set(socket, watch = new SocketWatch(socket));
    return watch;
  }

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.onOpen(() => {
      this.#opened = true;
      this.#asked = false;
      this.#reportedUnreachable = false;
    });
    // A failed attempt fires `error` and `close` (Node 22's WebSocket only `error`): either
    // one, before the connection ever opened, asks once per run of failures.
    const failed = () => {
      // A close the app asked for (`disconnect()`) is no failure.
      const clean = (socket as unknown as { closeWasClean?: boolean }).closeWasClean === true;
      if (!this.#opened && !clean && !this.#asked && this.refusal === null) {
        this.#asked = true;
        void this.#ask();
      }
    };
    socket.onError(() => {
      failed();
      this.#closeAfterError();
    });
    socket.onClose(() => {
      failed();
      this.#opened = false;
    });
    // Every connect, by any client or by phoenix's reconnect timer, waits for the transport
    // (Node 20: the `ws` import) and clears a refusal when the app asks again.
    const connect = socket.connect.bind(socket);
    (socket as { connect: (params?: unknown) => void }).connect = (params?: unknown) => {
      void this.#ready.then(() => {
        if (this.refusal !== null) return;
        try {
          connect(params as object);
        } catch (err) {
          // The transport refused the URL itself (a malformed endpoint): no retry can help.
          const why = err instanceof Error ? err.message : String(err);
          this.fail(
            new ConnectionError(why, null, true, `Cannot connect: ${why}. Not reconnecting.`),
          );
        }
      });
    };
  }

  /**
   * Node 22's WebSocket reports a failed connection (refused upgrade, server down) with an
   * `error` and no `close`, so phoenix would never reconnect. When the transport is not open
   * and its close was not handled shortly after, hand phoenix the close it waits for.
   */
  #closeAfterError(): void {
    const connection = (this.#socket as unknown as { connection?: PhoenixConnection }).connection;
    const transport = connection?.transport;
    if (!connection || !transport) return;
    setTimeout(() => {
      // (Node 22 leaves it CONNECTING after the error.)
      if (connection.closeHandled !== false || transport.readyState === 1) return;
      transport.onclose?.({ code: 1006, reason: "", wasClean: false });
    }, 50);
  }

  /** Listens for connection errors; returns the function that stops listening. */
  onError(listener: ConnectionErrorListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Forgets a refusal so the next connect tries again (an explicit `connect()` of the app). */
  retry(): void {
    this.refusal = null;
    this.#asked = false;
  }

  /** Connects only once `ready` (the transport) has settled; a failure is a fatal error. */
  waitFor(ready: () => Promise<WebSocketConstructor>): void {
    if (this.#loading) return;
    this.#loading = true;
    this.#ready = ready().then(
      (transport) =>
        void ((this.#socket as unknown as { transport: unknown }).transport = transport),
      (err: Error) => this.fail(new ConnectionError(err.message, null, true)),
    );
  }

  /** Stops the socket for good with `error` and tells every listener. */
  fail(error: ConnectionError): void {
    if (error.fatal) {
      this.refusal = error;
      this.#socket.disconnect();
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(error);
      } catch (err) {
        console.error("switchboard: a connection error listener threw:", err);
      }
    }
  }

  /** Asks the socket URL over plain HTTP why the upgrade failed. */
  async #ask(): Promise<void> {
    const url = this.#socket.endPointURL().replace(/^ws/, "http");
    const shown = url.replace(/\?.*$/, "");
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: "application/json" } });
    } catch {
      this.#asked = false; // ask again after the next failed attempt (the server may come back)
      if (this.#reportedUnreachable) return;
      this.#reportedUnreachable = true;
      return this.fail(
        new ConnectionError(
          "server unreachable",
          null,
          false,
          `Cannot reach ${shown}: retrying.`,
        ),
      );
    }
    const body = await res.json().catch(() => ({})) as { reason?: unknown; error?: unknown };
    const reason = String(body.reason ?? body.error ?? `HTTP ${res.status}`);
    if (res.status === 401 || res.status === 403) {
      const what = res.status === 401 ? "app key" : "origin";
      this.fail(
        new ConnectionError(
          reason,
          res.status,
          true,
          `The server refused the connection to ${shown}: ${reason} (HTTP ${res.status}; check the ${what}). Not reconnecting.`,
        ),
      );
    } else if (res.status === 503) {
      this.fail(
        new ConnectionError(
          reason,
          503,
          false,
          `The server refused the connection to ${shown}: ${reason} (HTTP 503): retrying.`,
        ),
      );
    }
  }
}

/** The runtime's global WebSocket, if any. */
function globalWebSocket(): WebSocketConstructor | undefined {
  return (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
}

/**
 * `import(name)` that bundlers leave alone (the name is only known at run time), so the
 * optional `ws` is neither bundled nor required by browser builds.
 */
function importOptional(parts: string[]): Promise<unknown> {
  const name = parts.join("");
  return import(name);
}

/** Loads the `ws` package (Node 20 has no global WebSocket). */
async function loadWs(): Promise<WebSocketConstructor> {
  try {
    const mod = await importOptional(["w", "s"]) as {
      WebSocket?: WebSocketConstructor;
      default?: WebSocketConstructor;
    };
    const ws = mod.WebSocket ?? mod.default;
    if (typeof ws === "function") return ws;
  } catch {
    // not installed: the error below says what to do
  }
  const node = (globalThis as { process?: { version?: string } }).process?.version;
  throw new Error(
    `No WebSocket in this runtime${
      node ? ` (Node ${node} has none before Node 22)` : ""
    }: install the ws package (npm install ws), which the client then loads itself, or pass the ws package's WebSocket class as the transport option.`,
  );
}

/** Stands in for the WebSocket until `ws` is loaded (it is replaced before any connect). */
class WebSocketNotLoaded {
  constructor() {
    throw new Error("switchboard: the WebSocket transport is not loaded yet");
  }
}

/**
 * The `transport` option of a phoenix Socket: `given` when set, else the global WebSocket,
 * else a stand-in that `watchSocket` replaces with `ws` before the first connect.
 */
export function transportFor(given?: WebSocketConstructor): WebSocketConstructor {
  return given ?? globalWebSocket() ?? WebSocketNotLoaded;
}

/** Watches a socket made with `transportFor` (and loads `ws` when it needs it). */
export function watchSocket(socket: Socket): SocketWatch {
  const watch = SocketWatch.of(socket);
  if ((socket as unknown as { transport: unknown }).transport === WebSocketNotLoaded) {
    watch.waitFor(loadWs);
  }
  return watch;
}
