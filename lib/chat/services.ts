// What chat's REST and live sides share (the thread log and the record store), built once
// per server.
import type { ProductDeps } from "../product.ts";
import { ChatStore } from "./store.ts";
import { ThreadLog } from "./thread_log.ts";

/** What the REST side and the live side share: built once per server by `createChat`. */
export interface ChatServices {
  threadLog: ThreadLog;
  store: ChatStore;
}

/** Builds the thread log and the record store over `deps`. */
export function createChatServices(deps: ProductDeps): ChatServices {
  const threadLog = new ThreadLog(deps.openLog("chat"), deps.hub);
  return { threadLog, store: new ChatStore(deps.env, threadLog) };
}
