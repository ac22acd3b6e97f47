/**
 * The live side of chat: the thread channel (runs, token streaming, branches, history). Built
 * by lib/chat/mod.ts with the shared services; see docs/chat-live.md.
 */
import type { ProductDeps } from "../../product.ts";
import type { ChannelHandler } from "../../socket/handler.ts";
import type { ChatServices } from "../services.ts";
import { threadChannel } from "./channel.ts";
import { MessageWindow } from "./messages.ts";
import { RunTable } from "./runs.ts";
import { LiveService } from "./service.ts";

export { LiveService } from "./service.ts";
export type { RunRecord, RunStatus } from "./runs.ts";

/** The live chat module: the `chat` channel handler plus a shutdown hook. */
export interface ChatLive {
  handler: ChannelHandler;
  service: LiveService;
  /** Stops roll-up timers. */
  close(): void;
}

/** Builds the thread channel over the REST side's thread log and store. */
export function createChatLive(deps: ProductDeps, services: ChatServices): ChatLive {
  const runs = new RunTable(deps.env);
  const service = new LiveService(services, runs, deps.hub);
  const window = new MessageWindow(services.store);
  return {
    handler: threadChannel(services, service, window),
    service,
    close: () => service.rollups.clear(),
  };
}
