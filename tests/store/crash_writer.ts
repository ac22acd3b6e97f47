// Child process for the crash test: appends forever and prints each acknowledged position.
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";

const env = new StoreEnv(Deno.args[0]);
const log = new OrderedLog(env);
const encoder = new TextEncoder();
let n = 0;
// Several concurrent writers so commits are batched (group commit) when the kill lands.
await Promise.all(Array.from({ length: 8 }, async () => {
  while (true) {
    const id = n++;
    const { position } = await log.append("crash", () => ({ entries: [{ id }], result: 0 }));
    Deno.stdout.writeSync(encoder.encode(`ack ${position} ${id}\n`));
  }
}));
