// The chat product's entry: builds the shared services, the REST routes (built on their first
// request), the bot webhooks and the live thread channel (`createChat`).
import type { ProductDeps, ProductModule } from "../product.ts";
import { CHAT } from "../http/surfaces.ts";
import { createChatLive } from "./live/mod.ts";
import { lazyChatRestRoutes } from "./rest/lazy.ts";
import { type ChatServices, createChatServices } from "./services.ts";
import { chatOutbox, WebhookDispatcher } from "./webhooks/dispatcher.ts";

export { type ChatServices, createChatServices } from "./services.ts";

/** Builds the chat product (REST routes, webhooks and the live thread channel). */
export function createChat(deps: ProductDeps): ProductModule & { services: ChatServices } {
  const services = createChatServices(deps);
  const live = createChatLive(deps, services);
  const outbox = chatOutbox(deps.env);
  const webhooks = new WebhookDispatcher(services.store, deps.apps, outbox, services.threadLog);
  return {
    routes: lazyChatRestRoutes(deps.apps, services),
    surface: CHAT,
    channels: { chat: live.handler },
    services,
    close: () => {
      webhooks.close();
      live.close();
    },
  };
}
