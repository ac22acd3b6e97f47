import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { Switchboard, SwitchboardError } from "../../sdk/server/mod.ts";

Deno.test("Switchboard.chat (ChatRestClient) drives every chat resource and surfaces errors as SwitchboardError", async () => {
  const s = await startInProcess();
  try {
    const chat = new Switchboard({ baseUrl: s.baseUrl, appKey: "key1", appSecret: "secret1" }).chat;
    const bot = await chat.createBot({ name: "B" }, "b1");
    assert.match(bot.meta.webhook_secret, /^whsec_/);
    assert.match((await chat.rotateBotSecret("b1")).meta.webhook_secret, /^whsec_/);
    assert.equal((await chat.updateBot("b1", { name: "B2" })).data.attributes.name, "B2");
    assert.equal((await chat.getBot("b1")).data.id, "b1");
    assert.equal((await chat.listBots()).data.length, 1);

    await chat.createThread({ id: "t", title: "SDK" });
    assert.equal((await chat.assignBot("t", "b1")).data.attributes.status, "bot");
    assert.equal((await chat.handoff("t")).data.attributes.status, "human");
    assert.equal((await chat.resolve("t")).data.attributes.status, "resolved");
    assert.equal((await chat.updateThread("t", { status: "open" })).data.attributes.status, "open");
    assert.equal((await chat.listThreads({ status: ["open"], bot: "b1" })).data.length, 1);

    await chat.createMessage("t", "m1", { role: "user", content: "a" });
    await chat.createMessage("t", "m2", { role: "assistant", content: "b", parent_id: "m1" });
    const err = await chat.createMessage("t", "m1", { role: "user" }).catch((e) => e);
    assert.ok(err instanceof SwitchboardError);
    assert.equal(err.status, 409);
    const page = await chat.listMessages("t", { size: 1 });
    assert.equal((await chat.page(page.links.next!)).data[0].id, "m2");
    assert.equal((await chat.listReplies("t", "m1")).data[0].id, "m2");
    assert.equal((await chat.editMessage("t", "m2", "c")).data.attributes.content, "c");
    assert.equal((await chat.softDeleteMessage("t", "m2")).data.attributes.content, null);
    assert.equal((await chat.getMessage("t", "m1")).data.id, "m1");

    const p = await chat.addParticipant("t", { client_id: "alice" });
    await chat.markRead("t", p.data.id, "m1");
    assert.equal(
      (await chat.setParticipantRole("t", p.data.id, "admin")).data.attributes.role,
      "admin",
    );
    assert.equal((await chat.listParticipants("t")).data.length, 1);
    const r = await chat.addReaction("t", "m1", p.data.id, "🔥");
    assert.equal((await chat.listReactions("t", "m1")).data.length, 1);
    await chat.removeReaction("t", "m1", r.data.id);
    await chat.removeParticipant("t", p.data.id);
    await chat.deleteMessage("t", "m1");
    assert.equal((await chat.getThread("t", { includeParticipants: true })).included?.length, 0);
    assert.equal((await chat.archive("t")).data.attributes.status, "archived");
    await chat.deleteThread("t");
    await chat.deleteBot("b1");
    assert.equal((await chat.getThread("t").catch((e) => e)).status, 404);
    assert.ok(String((await chat.openApi()).openapi).startsWith("3.1"));
  } finally {
    await s.stop();
  }
});
