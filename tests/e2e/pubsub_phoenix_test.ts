// The official phoenix client, configured with nothing but docs/protocol.md ("Connecting"),
// receives a trigger.
import assert from "node:assert/strict";
import { Socket } from "phoenix";
import { startInProcess } from "../helpers/in_process.ts";
import { trigger } from "../pubsub/helpers.ts";

Deno.test("phoenix Socket subscribes to a public channel and receives a triggered event", async () => {
  const server = await startInProcess();
  const socket = new Socket(server.baseUrl.replace("http", "ws") + "/socket", {
    params: { app_key: "key1" },
  });
  try {
    socket.connect();
    const channel = socket.channel("pubsub:key1:news", {});
    const got = new Promise<unknown>((resolve) => channel.on("breaking", resolve));
    const joined = await new Promise<any>((resolve, reject) => {
      channel.join().receive("ok", resolve).receive("error", reject).receive(
        "timeout",
        () => reject(new Error("timeout")),
      );
    });
    assert.deepEqual(joined, { serial: 0, epoch: "0" });
    assert.deepEqual(await trigger(server, "news", "breaking", { title: "hi" }), {
      status: 200,
      body: { serial: 1 },
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const payload = await Promise.race([
      got,
      new Promise((_, rej) => (timer = setTimeout(() => rej(new Error("no event")), 5000))),
    ]).finally(() => clearTimeout(timer));
    assert.deepEqual(payload, { serial: 1, data: { title: "hi" } });
  } finally {
    socket.disconnect();
    await server.stop();
  }
});
