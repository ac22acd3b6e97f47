import type { ProductDeps, ProductModule } from "../product.ts";
import { createChatLive } from "./live/mod.ts";
import { chatRestRoutes } from "./rest/mod.ts";
import { ChatStore } from "./store.ts";
import { ThreadLog } from "./thread_log.ts";
import { WebhookDispatcher } from "./webhooks/dispatcher.ts";

/** What the REST side and the live side share: built once per server by `createChat`. */
export interface ChatServices {
  threadLog: ThreadLog;
  store: ChatStore;
}

/** Builds the thread log and the record store over `deps.env` / `deps.hub`. */
export function createChatServices(deps: ProductDeps): ChatServices {
  const threadLog = new ThreadLog(deps.openLog("chat"), deps.hub);
  return { threadLog, store: new ChatStore(deps.env, threadLog) };
}

/** Builds the chat product (REST routes, webhooks and the live thread channel). */
export function createChat(deps: ProductDeps): ProductModule {
  const services = createChatServices(deps);
  const live = createChatLive(deps, services);
  const webhooks = new WebhookDispatcher(services.store, services.threadLog);
  return {
    routes: chatRestRoutes(deps.apps, services),
    channels: { chat: live.handler },
    close: () => {
      webhooks.close();
      live.close();
    },
  };
}
