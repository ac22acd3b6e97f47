// Clustered mode (issue 34 point 1): a presence join made on a node that does not own the
// channel is reported by the owner once the join's report reaches it. Here the owner is frozen
// (SIGSTOP) before the join, so it never sees the report, then SIGKILLed: the channel's new
// owner still sends channel_occupied / member_added, and after the member leaves,
// member_removed / channel_vacated.
import assert from "node:assert/strict";
import { ownerOf } from "../../lib/cluster/nodes.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { sdkFor } from "../pubsub/helpers.ts";
import { until } from "./cluster.ts";
import { webhookCluster } from "./webhook_cluster.ts";

const NODES = ["node-1", "node-2", "node-3"];

/** A presence channel of app key1 that node-3 owns while all three nodes are live. */
function channelOwnedByNode3(): string {
  for (let i = 0;; i++) {
    const name = `presence-owned-${i}`;
    if (ownerOf(`pubsub:key1:${name}`, NODES) === "node-3") return name;
  }
}

Deno.test({
  name:
    "cluster: a join on a non-owner node is reported by the channel's new owner when the owner dies before reporting it",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { hook, cluster, events } = await webhookCluster(3);
    const seen = (name: string, channel: string, user?: string) =>
      events().some((e) => e.name === name && e.channel === channel && e.user_id === user);
    const sockets: RawSocket[] = [];
    const join = async (node: number, channel: string, user: string) => {
      const socket = await RawSocket.connect(cluster.nodes[node].wsUrl());
      sockets.push(socket);
      const { auth, channel_data } = await sdkFor(cluster.nodes[node]).authenticate(
        socket.socketId,
        channel,
        { user_id: user },
      );
      assert.equal(
        (await socket.join(`pubsub:key1:${channel}`, { auth, channel_data })).status,
        "ok",
      );
      return socket;
    };
    try {
      const [first] = cluster.nodes;
      // node-1 has heard node-3 (its presence report arrived), so node-3 owns the channel in
      // node-1's view too and node-1 does not hold the join.
      await join(2, "presence-warm", "wes");
      await until("node-1 sees node-3's member", async () => {
        const res = await fetch(`${first.baseUrl}/api/apps/app-1/channels/presence-warm/users`, {
          headers: first.headers(),
        });
        return (await res.json()).count === 1;
      });

      const channel = channelOwnedByNode3();
      Deno.kill(cluster.nodes[2].pid, "SIGSTOP"); // the owner will never see the join's report
      const member = await join(0, channel, "cid");
      await cluster.kill(2);

      await until(
        "member_added / channel_occupied from the new owner",
        () =>
          Promise.resolve(
            seen("member_added", channel, "cid") && seen("channel_occupied", channel),
          ),
      );
      assert.equal(seen("member_removed", channel, "cid"), false);

      await member.close();
      await until(
        "member_removed / channel_vacated after the member left",
        () =>
          Promise.resolve(
            seen("member_removed", channel, "cid") && seen("channel_vacated", channel),
          ),
      );
      // The member's end comes after its start (a repeated start too).
      const order = events().filter((e) => e.user_id === "cid").map((e) => e.name);
      assert.ok(order.lastIndexOf("member_added") < order.indexOf("member_removed"), order.join());
    } finally {
      for (const s of sockets) await s.close().catch(() => {});
      await cluster.stop();
      await hook.close();
    }
  },
});
