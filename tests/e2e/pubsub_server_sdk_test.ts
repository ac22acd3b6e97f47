import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { sdkFor } from "../pubsub/helpers.ts";
import { SwitchboardError } from "../../sdk/server/mod.ts";

Deno.test("Switchboard channel methods: trigger, push, history, channels, channel, users", async () => {
  const server = await startInProcess();
  const sdk = sdkFor(server);
  const s = await RawSocket.connect(server.wsUrl("key1"));
  try {
    assert.deepEqual(await sdk.trigger("c1", "e", { a: 1 }), { serial: 1 });
    assert.deepEqual(
      await sdk.push([{ channel: "c1", event: "e", data: 2 }, { channel: "c2", event: "e" }]),
      { serials: [2, 1] },
    );
    const page = await sdk.history("c1", { after: 1, limit: 10 });
    assert.deepEqual(page.items.map((i) => [i.serial, i.data]), [[2, 2]]);
    const { auth, channel_data } = await sdk.authenticate(s.socketId, "presence-x", { user_id: 7 });
    assert.equal((await s.join("pubsub:key1:presence-x", { auth, channel_data })).status, "ok");
    assert.deepEqual(await sdk.channels({ info: ["user_count"] }), {
      channels: { "presence-x": { user_count: 1 } },
    });
    assert.deepEqual(await sdk.channel("presence-x"), {
      occupied: true,
      subscription_count: 1,
      serial: 0,
      user_count: 1,
    });
    assert.deepEqual(await sdk.users("presence-x"), { users: [{ user_id: "7" }], count: 1 });
    await assert.rejects(
      sdk.trigger("bad name", "e"),
      (e) => e instanceof SwitchboardError && e.status === 422,
    );
  } finally {
    await s.close();
    await server.stop();
  }
});
