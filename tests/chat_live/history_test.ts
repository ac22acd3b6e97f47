import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { client, tid } from "./helpers.ts";

Deno.test("the snapshot holds the newest 50 messages; loadOlder pages back through the rest", async () => {
  const server = await startInProcess();
  const writer = client(server);
  const reader = client(server);
  try {
    const thread = tid();
    const w = await writer.connect(thread, { clientId: "w" });
    for (let i = 0; i < 60; i++) await w.view.send(`m${i}`); // 60 user messages + 60 placeholders
    const all = w.view.getChannelMessages().map((m) => m.messageId);
    assert.equal(all.length, 120);

    const r = await reader.connect(thread, { clientId: "r" });
    assert.equal(r.view.getChannelMessages().length, 50);
    assert.equal(r.view.hasOlder(), true);
    assert.deepEqual(r.view.getChannelMessages().map((m) => m.messageId), all.slice(70));
    const page1 = await r.view.loadOlder();
    assert.equal(page1.length, 50);
    assert.equal(r.view.hasOlder(), true);
    const page2 = await r.view.loadOlder(30);
    assert.equal(page2.length, 20);
    assert.equal(r.view.hasOlder(), false);
    assert.deepEqual(r.view.getChannelMessages().map((m) => m.messageId), all);
    assert.deepEqual((await r.view.loadOlder()).length, 0);
    // The selected branch now walks from the very first message.
    assert.equal(r.view.getMessages()[0].content, "m0");
    assert.equal(r.view.getMessages().length, 120);
  } finally {
    writer.disconnect();
    reader.disconnect();
    await server.stop();
  }
});
