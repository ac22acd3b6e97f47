// Helpers of the Pusher-protocol tests: the official pusher-js client (Node build) and pusher
// server library pointed at a test server, and a raw Pusher-protocol socket for wire details.
import PusherJs from "pusher-js";
import PusherServer from "pusher";

/** A pusher-js client (its bundled typings do not describe the Node build's default export). */
// deno-lint-ignore no-explicit-any
export type Pusher = any;
// deno-lint-ignore no-explicit-any
const PusherClient = PusherJs as any;
import type { TestApp, TestServer } from "../helpers/server.ts";

/** Base64 of 32 bytes: the master key of end-to-end encrypted channels in these tests. */
export const ENCRYPTION_KEY = btoa(String.fromCharCode(...new Uint8Array(32).map((_, i) => i + 1)));

/** The `pusher` server library for one app of a test server (with an encryption master key). */
export function serverLib(server: TestServer, app: TestApp = server.apps[0]): PusherServer {
  return new PusherServer({
    appId: app.id,
    key: app.key,
    secret: app.secret,
    host: "127.0.0.1",
    port: String(server.port),
    useTLS: false,
    encryptionMasterKeyBase64: ENCRYPTION_KEY,
  });
}

/** Who a pusher-js client is in presence channels (its channel authorizer signs this). */
export interface Identity {
  user_id: string;
  user_info?: Record<string, unknown>;
}

/**
 * A pusher-js client connected to the test server with the options docs/pusher.md
 * ("pusher-js") gives; its
 * channel authorizer signs with the `pusher` library, as a customer's auth endpoint would.
 */
export function client(
  server: TestServer,
  who: Identity = { user_id: "u1" },
  app: TestApp = server.apps[0],
): Pusher {
  const lib = serverLib(server, app);
  return new PusherClient(app.key, {
    wsHost: "127.0.0.1",
    wsPort: server.port,
    forceTLS: false,
    enabledTransports: ["ws"],
    cluster: "",
    channelAuthorization: {
      customHandler: (
        p: { socketId: string; channelName: string },
        cb: (e: Error | null, d: unknown) => void,
      ) =>
        cb(
          null,
          lib.authorizeChannel(
            p.socketId,
            p.channelName,
            p.channelName.startsWith("presence-") ? who : undefined,
          ),
        ),
    },
    userAuthentication: {
      customHandler: (p: { socketId: string }, cb: (e: Error | null, d: unknown) => void) =>
        cb(null, lib.authenticateUser(p.socketId, { id: who.user_id })),
    },
  });
}

/** Resolves once the client is connected. */
export function connected(p: Pusher): Promise<void> {
  if (p.connection.state === "connected") return Promise.resolve();
  return new Promise((resolve) => p.connection.bind("connected", () => resolve()));
}

/** Subscribes and resolves with the channel once `pusher:subscription_succeeded` arrived. */
export function subscribed(p: Pusher, name: string): Promise<Pusher> {
  const ch = p.subscribe(name);
  return new Promise((resolve, reject) => {
    ch.bind("pusher:subscription_succeeded", () => resolve(ch));
    ch.bind(
      "pusher:subscription_error",
      (e: unknown) => reject(new Error(`subscription error: ${JSON.stringify(e)}`)),
    );
  });
}

/** Collects `event` on a channel: the data of each delivery, in order. */
export function collect(
  ch: { bind(e: string, f: (d: unknown, m?: unknown) => void): unknown },
  event: string,
) {
  const got: unknown[] = [];
  ch.bind(event, (d: unknown) => got.push(d));
  return got;
}

/** Waits until `cond()` holds (polling), or fails after `ms`. */
export async function until(cond: () => boolean, ms = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** One parsed Pusher message as it came over the wire. */
export type Message = { event: string; channel?: string; data?: unknown; [extra: string]: unknown };

/** A raw Pusher-protocol socket that records every message (data strings left as sent). */
export class RawPusher {
  messages: Message[] = [];
  closeEvent?: CloseEvent;
  socketId = "";
  #ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (e) => this.messages.push(JSON.parse(e.data as string));
    ws.onclose = (e) => (this.closeEvent = e);
  }

  /** Opens `/app/{key}` (plus `query`) and waits for the first message. */
  static async connect(
    server: TestServer,
    key: string,
    query = "?protocol=7&client=raw&version=1",
  ): Promise<RawPusher> {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/app/${key}${query}`);
    const sock = new RawPusher(ws);
    await new Promise<void>((resolve, reject) => {
      ws.onerror = () => reject(new Error("cannot connect"));
      ws.onopen = () => resolve();
    });
    const first = await sock.waitFor(() => true);
    if (first.event === "pusher:connection_established") {
      sock.socketId = JSON.parse(first.data as string).socket_id;
    }
    return sock;
  }

  /** Sends one message. */
  send(event: string, data: unknown, channel?: string): void {
    this.#ws.send(
      JSON.stringify(channel === undefined ? { event, data } : { event, data, channel }),
    );
  }

  /** Waits for a message matching `pred` (scanning from the first), default 5 s; fails at once
   * when the socket closed without one, naming the close. */
  async waitFor(pred: (m: Message) => boolean, ms = 5000): Promise<Message> {
    const deadline = Date.now() + ms;
    while (true) {
      const found = this.messages.find(pred);
      if (found) return found;
      const closed = this.closeEvent;
      if (closed || Date.now() > deadline) {
        const why = closed ? `socket closed (${closed.code} ${closed.reason})` : "timed out";
        throw new Error(`${why}; got ${JSON.stringify(this.messages.slice(-10)).slice(-800)}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Waits until the server closed the socket; resolves with the close event. */
  async closed(ms = 5000): Promise<CloseEvent> {
    await until(() => this.closeEvent !== undefined, ms, "close");
    return this.closeEvent!;
  }

  /** Closes the socket. */
  close(): void {
    this.#ws.close();
  }
}
