// Clustered mode (issue 34 point 1): when a node is SIGKILLed, the presence members and
// channels it held end, and webhooks say so: the surviving node, the owner now, sends
// member_removed and channel_vacated (both protocols), each once.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { sdkFor } from "../pubsub/helpers.ts";
import { RawPusher, serverLib } from "../pusher/helpers.ts";
import { until } from "./cluster.ts";
import { webhookCluster } from "./webhook_cluster.ts";

Deno.test({
  name:
    "cluster: a SIGKILLed node's presence members and channels end in member_removed / channel_vacated webhooks",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { hook, cluster, events } = await webhookCluster(2);
    const names = (name: string) =>
      events().filter((e) => e.name === name).map((e) =>
        `${e.channel}${e.user_id ? `:${e.user_id}` : ""}`
      ).sort();
    try {
      const [survivor, doomed] = cluster.nodes;
      // On the node that will die: a Phoenix presence member and public channel, a Pusher one.
      const phoenix = await RawSocket.connect(doomed.wsUrl());
      const { auth, channel_data } = await sdkFor(doomed).authenticate(
        phoenix.socketId,
        "presence-a",
        { user_id: "ann" },
      );
      assert.equal(
        (await phoenix.join("pubsub:key1:presence-a", { auth, channel_data })).status,
        "ok",
      );
      assert.equal((await phoenix.join("pubsub:key1:open-a", {})).status, "ok");
      const pusher = await RawPusher.connect(doomed, "key1");
      const signed = serverLib(doomed).authorizeChannel(pusher.socketId, "presence-b", {
        user_id: "bea",
      });
      pusher.send("pusher:subscribe", {
        channel: "presence-b",
        auth: signed.auth,
        channel_data: JSON.stringify({ user_id: "bea" }),
      });
      await pusher.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
      await until(
        "the joins' webhooks",
        () =>
          Promise.resolve(
            names("member_added").length === 2 && names("channel_occupied").length === 3,
          ),
      );

      await cluster.kill(1);
      await until(
        "the leaves' webhooks",
        () =>
          Promise.resolve(
            names("member_removed").length >= 2 && names("channel_vacated").length >= 3,
          ),
      );
      await new Promise((r) => setTimeout(r, 1000)); // a repeat would be here by now
      assert.deepEqual(names("member_removed"), ["presence-a:ann", "presence-b:bea"]);
      assert.deepEqual(names("channel_vacated"), ["open-a", "presence-a", "presence-b"]);
      const listing = await fetch(`${survivor.baseUrl}/api/apps/app-1/channels`, {
        headers: survivor.headers(),
      });
      assert.deepEqual((await listing.json()).channels, {});
      await phoenix.close().catch(() => {});
      pusher.close();
    } finally {
      await cluster.stop();
      await hook.close();
    }
  },
});
