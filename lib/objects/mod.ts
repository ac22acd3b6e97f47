// The Durable Objects product's entry: builds the store over its ordered log, the HTTP API
// (with the direct write routes) and the read-only `durable` channel (`createObjects`).
import type { ProductDeps, ProductModule } from "../product.ts";
import { OBJECTS } from "../http/surfaces.ts";
import { objectChannel } from "./channel.ts";
import { objectDirect, objectRoutes } from "./routes.ts";
import { ObjectStore } from "./store.ts";

export { addressOf, ObjectStore } from "./store.ts";
export type { LogItem, ObjectRef, Snapshot } from "./store.ts";
export type { MaterialOp, Op } from "./ops.ts";

/** Builds the objects product: the HTTP API and the read-only `durable` channel handler. */
export function createObjects(deps: ProductDeps): ProductModule & { store: ObjectStore } {
  const store = new ObjectStore(deps.env, deps.hub, deps.openLog("objects", { staged: true }));
  return {
    routes: objectRoutes(deps.apps, store),
    surface: OBJECTS,
    direct: [objectDirect(deps.apps, store)],
    channels: { durable: objectChannel(store) },
    store,
  };
}
