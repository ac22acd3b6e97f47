/**
 * The Pusher WebSocket endpoint, `ws://HOST:PORT/app/{app_key}?protocol=7`: it accepts every
 * upgrade (Pusher reports an unknown app or a refused origin as a `pusher:error` on the open
 * socket, which is what Pusher clients act on), registers the Pusher wire format with the
 * hub, and keeps the users signed in with `pusher:signin` for the REST API.
 */
import { type App, appEnabled, originAllowed } from "../config/apps.ts";
import type { ProductDeps } from "../product.ts";
import type { ChannelService } from "../pubsub/service.ts";
import type { Transport } from "../socket/transport.ts";
import type { LiveSocket, SocketEndpoint, UpgradeDecision } from "../socket/endpoint.ts";
import { MAX_BUFFERED_BYTES } from "../socket/connection.ts";
import { PusherConnection, type Refusal } from "./connection.ts";
import type { PusherUsers } from "./rest.ts";
import { encodeForPusher, PUSHER_FORMAT, userTopic } from "./wire.ts";
import { keyOf } from "../wire/key.ts";

const PATH = /^\/app\/([^/]+)\/?$/;

/** Protocol versions spoken (pusher-js 8 asks for 7). */
const PROTOCOLS = new Set(["5", "6", "7"]);

/** See the module comment. */
export class PusherSockets implements SocketEndpoint, PusherUsers {
  #deps: ProductDeps;
  #svc: ChannelService;
  /** `{appId}\n{userId}` -> that user's signed-in sockets. */
  #users = new Map<string, Set<PusherConnection>>();

  constructor(deps: ProductDeps, svc: ChannelService) {
    this.#deps = deps;
    this.#svc = svc;
    deps.hub.addFormat(PUSHER_FORMAT, encodeForPusher);
  }

  /** `/app/{key}`. */
  matches(url: URL): boolean {
    return PATH.test(url.pathname);
  }

  /** Always accepted; the app key, protocol and origin are checked once the socket is open. */
  decide(url: URL, origin: string | null, full: (app: App) => boolean): UpgradeDecision {
    const raw = PATH.exec(url.pathname)![1];
    let key = raw;
    try {
      key = decodeURIComponent(raw);
    } catch { /* malformed escapes: no app has that key */ }
    const app = this.#deps.apps.byKey(key);
    let refusal: Refusal | undefined;
    if (!app) {
      refusal = { code: 4001, message: `App key ${key.slice(0, 100)} does not exist` };
    } else if (!appEnabled(app)) {
      refusal = { code: 4003, message: "App is disabled" };
    } else if (!PROTOCOLS.has(url.searchParams.get("protocol") ?? "7")) {
      refusal = { code: 4007, message: "Unsupported protocol version: use 7" };
    } else if (!originAllowed(app, origin)) {
      refusal = { code: 4009, message: "Origin not allowed for this app" };
    } else if (full(app)) {
      refusal = { code: 4100, message: "Over capacity: the app is at its max_connections" };
    }
    return { accept: { app, refusal } };
  }

  /** Creates the Pusher connection (which closes itself at once after a refusal). */
  open(accepted: unknown, transport: Transport): LiveSocket {
    const { app, refusal } = accepted as { app?: App; refusal?: Refusal };
    return new PusherConnection(app, refusal, transport, {
      svc: this.#svc,
      hub: this.#deps.hub,
      maxBufferedBytes: MAX_BUFFERED_BYTES,
      activitySeconds: this.#deps.config.idleTimeoutSeconds,
      users: this,
    });
  }

  /** Records that `conn` signed in as `userId` (until it closes). */
  signedIn(app: App, userId: string, conn: PusherConnection): void {
    const k = keyOf(app.id, userId);
    let set = this.#users.get(k);
    if (!set) this.#users.set(k, set = new Set());
    set.add(conn);
  }

  /** Forgets a closed signed-in socket. */
  signedOut(app: App, userId: string, conn: PusherConnection): void {
    const k = keyOf(app.id, userId);
    const set = this.#users.get(k);
    if (set?.delete(conn) && set.size === 0) this.#users.delete(k);
  }

  /** Closes every Pusher socket signed in as `userId` (REST `terminate_connections`). */
  terminate(app: App, userId: string): number {
    const set = this.#users.get(keyOf(app.id, userId));
    if (!set) return 0;
    const conns = [...set];
    for (const conn of conns) conn.fail(4009, "Connection terminated by the server");
    return conns.length;
  }

  /** Delivers to the `#server-to-user-{id}` channel of every socket signed in as `userId`. */
  sendToUser(app: App, userId: string, event: string, data: string): void {
    this.#deps.hub.publish(
      userTopic(app.key, userId),
      event,
      { serial: null, data },
      undefined,
      "cluster",
    );
  }
}
