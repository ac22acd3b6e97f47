// A cluster whose app sends its channel webhooks (occupied/vacated, member added/removed) to a
// local receiver, with fast presence heartbeats: what the clustered webhook tests share.
import { APPS } from "../helpers/server.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { startCluster } from "./cluster.ts";

/** One event of a received webhook body. */
export type Event = { name: string; channel: string; user_id?: string };

/** Starts `nodes` nodes and the receiver; `events()` is every distinct event received so far. */
export async function webhookCluster(nodes: number) {
  const hook = receiver();
  const cluster = await startCluster({
    nodes,
    apps: [{
      ...APPS[0],
      webhooks: [{
        url: hook.url,
        event_types: ["channel_occupied", "channel_vacated", "member_added", "member_removed"],
      }],
    }],
    env: { SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300" },
  });
  const events = () =>
    [...new Set(hook.got.map((d) => d.body))].flatMap((b) => JSON.parse(b).events as Event[]);
  return { hook, cluster, events };
}
