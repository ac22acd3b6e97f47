import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid } from "./helpers.ts";

Deno.test("after_log_id: the entries after it are pushed oldest first before the join reply, then live from log_id + 1", async () => {
  const server = await startInProcess();
  const writer = client(server);
  const raw = await RawSocket.connect(server.wsUrl());
  try {
    const thread = tid();
    const topic = `chat:key1:${thread}`;
    const w = await writer.connect(thread, { clientId: "w" });
    await w.view.send("one");
    await w.view.send("two");
    const head = w.view.logId;
    const join = await raw.join(topic, { client_id: "r", after_log_id: 2 });
    assert.equal(join.status, "ok");
    assert.equal(join.response.log_id, head);
    const frames = raw.events(topic);
    const replyAt = frames.findIndex((f) => f[3] === "phx_reply");
    const replayed = frames.slice(0, replyAt).map((f) => f[4].log_id);
    assert.deepEqual(replayed, Array.from({ length: head - 2 }, (_, i) => i + 3));
    await w.view.send("three");
    const live = await raw.waitFor((f) => f[2] === topic && f[4].log_id === head + 1);
    assert.equal(live[3], "message:created");

    // The SDK's afterLogId: a fresh view starting at that position gets the same replay.
    const reader = client(server);
    try {
      const s = await reader.connect(thread, { clientId: "r2", afterLogId: head });
      assert.equal(s.view.logId, w.view.logId);
      assert.equal(s.view.getChannelMessages().length, 6);
    } finally {
      reader.disconnect();
    }
  } finally {
    await raw.close();
    writer.disconnect();
    await server.stop();
  }
});
