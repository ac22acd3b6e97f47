// The contract between the server and its products: what a product is built from
// (`ProductDeps`), what it offers (`ProductModule`: routes, direct routes, channel handlers,
// endpoints), and what it shares with a cluster (`SharedPresence`).
import type { Hono } from "hono";
import type { AppRegistry } from "./config/apps.ts";
import type { Config } from "./config/config.ts";
import type { Hub } from "./hub/hub.ts";
import type { ChannelHandler } from "./socket/handler.ts";
import type { SocketEndpoint } from "./socket/endpoint.ts";
import type { Storage } from "./store/storage.ts";
import type { StreamLog } from "./streams/mod.ts";
import type { Occupancy } from "./hub/occupancy.ts";
import type { Surface } from "./http/surfaces.ts";
import type { Topic } from "./wire/topic.ts";

/**
 * What the cluster reads and writes of a product's presence registry (pubsub's
 * `PresenceRegistry` is one): declared here, so this file imports no product. A presence
 * through another node is added and removed like one through this node, naming the node; the
 * product tells its subscribers of a member joining or leaving the same way for both.
 */
export interface PresenceTable {
  /** This node's id (the node of the presences its sockets hold). */
  readonly node: string;
  /** Calls `fn` when a user's first presence through this node starts or its last ends. */
  observeLocal(fn: (topic: Topic, userId: string, info: unknown, present: boolean) => void): void;
  /** The user is present through `node`; true when this made it a new member. */
  add(topic: Topic, userId: string, info: unknown, node: string): boolean;
  /** The user is no longer present through `node`; true when it left altogether. */
  remove(topic: Topic, userId: string, node: string): boolean;
  /** Every membership through `node`: `[topic, userId, info]`. */
  membersVia(node: string): [Topic, string, unknown][];
}

/**
 * A presence registry a product keeps, shared between the nodes of a cluster: `name` keeps
 * registries apart on the wire.
 */
export interface SharedPresence {
  name: string;
  registry: PresenceTable;
}

/** What every product module is built from. */
export interface ProductDeps {
  config: Config;
  apps: AppRegistry;
  env: Storage;
  hub: Hub;
  /** Opens the ordered log named `name` (one per product). Products see only the StreamLog
   * interface, so another implementation can stand behind it. `staged`: the product's
   * `prepare` and `apply` write only through the store's commit queue (see `OrderedLog`). */
  openLog(name: string, options?: { staged?: boolean }): StreamLog;
}

/**
 * A hot route a product answers before the router, for speed: for `req` at `path`, undefined
 * when it is not that route or is out of the ordinary (the router then answers it), else the
 * route template (metrics), the caller's app key and `respond`, whose thrown errors the
 * server answers in the module's `surface`, as the router would. It must behave as the router
 * does.
 */
export type DirectRoute = (req: Request, path: string) => {
  route: string;
  app: string;
  respond(): Promise<Response>;
} | undefined;

/** A product's two faces: HTTP routes and channel handlers (docs/design.md "Layers and
 * folders"). */
export interface ProductModule {
  /** Mounted at `/`; the module owns its paths (e.g. `/api/v1/objects/...`). */
  routes?: Hono;
  /** The shape its routes' (and direct routes') errors are answered in; NATIVE by default. */
  surface?: Surface;
  /** Hot routes answered before `routes` (see `DirectRoute`). */
  direct?: DirectRoute[];
  /** Handlers for the topic prefixes this product owns. */
  channels?: Record<string, ChannelHandler>;
  /** Further WebSocket protocols this module serves (the Pusher protocol at `/app/{key}`). */
  endpoints?: SocketEndpoint[];
  /** Presence shared between the nodes of a cluster. */
  presence?: SharedPresence;
  /** Subscription counts shared between the nodes of a cluster. */
  occupancy?: Occupancy;
  /** Called on shutdown after sockets are closed, before the store closes. */
  close?(): Promise<void> | void;
}
