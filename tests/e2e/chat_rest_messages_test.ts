import assert from "node:assert/strict";
import { withInProcess } from "../helpers/in_process.ts";
import { api, doc, makeMessage, makeThread, statusOf } from "../chat_rest/helpers.ts";

Deno.test("chat REST messages: create with caller id, 409 duplicate, get, list pages, replies, edit, soft and hard delete", async () => {
  await withInProcess(async (s) => {
    await makeThread(s, "t");
    const m1 = await api(
      s,
      "POST",
      "/api/chat/threads/t/messages",
      doc("messages", {
        role: "user",
        content: "hello",
        owner_client_id: "alice",
      }, { id: "m1" }),
    );
    assert.equal(m1.status, 201);
    assert.equal(m1.body.data.id, "m1");
    assert.equal(m1.body.data.attributes.status, "complete");
    assert.equal(m1.body.data.attributes.owner_client_id, "alice");
    const dup = await api(
      s,
      "POST",
      "/api/chat/threads/t/messages",
      doc("messages", { role: "user", content: "x" }, { id: "m1" }),
    );
    assert.equal(dup.status, 409);
    assert.equal(dup.body.errors[0].title, "Conflict");
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/ghost/messages",
        doc("messages", { role: "user" }, { id: "z" }),
      ),
      404,
    );
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/messages",
        doc("messages", { role: "robot" }, { id: "z" }),
      ),
      422,
    );
    assert.equal(
      await statusOf(s, "POST", "/api/chat/threads/t/messages", doc("messages", { role: "user" })),
      422,
    );
    const badParent = await api(
      s,
      "POST",
      "/api/chat/threads/t/messages",
      doc("messages", { role: "user", parent_id: "ghost" }, { id: "z" }),
    );
    assert.equal(badParent.status, 422);

    const reply = await api(
      s,
      "POST",
      "/api/chat/threads/t/messages",
      doc("messages", { role: "assistant", content: "hi" }, {
        id: "m2",
        relationships: { parent: { data: { type: "messages", id: "m1" } } },
      }),
    );
    assert.equal(reply.status, 201);
    assert.deepEqual(reply.body.data.relationships.parent.data, { type: "messages", id: "m1" });
    for (const id of ["m3", "m4", "m5"]) await makeMessage(s, "t", id, { parent_id: "m1" });

    const p1 = await api(s, "GET", "/api/chat/threads/t/messages?page[size]=2");
    assert.deepEqual(p1.body.data.map((m: any) => m.id), ["m1", "m2"]);
    const p2 = await api(s, "GET", p1.body.links.next);
    assert.deepEqual(p2.body.data.map((m: any) => m.id), ["m3", "m4"]);
    const p3 = await api(s, "GET", p2.body.links.next);
    assert.deepEqual(p3.body.data.map((m: any) => m.id), ["m5"]);
    assert.equal(p3.body.links.next, null);
    assert.deepEqual((await api(s, "GET", p2.body.links.prev)).body.data.map((m: any) => m.id), [
      "m1",
      "m2",
    ]);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/ghost/messages"), 404);

    const replies = await api(s, "GET", "/api/chat/threads/t/messages/m1/replies?page[size]=3");
    assert.deepEqual(replies.body.data.map((m: any) => m.id), ["m2", "m3", "m4"]);
    const replies2 = await api(s, "GET", replies.body.links.next);
    assert.deepEqual(replies2.body.data.map((m: any) => m.id), ["m5"]);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/t/messages/ghost/replies"), 404);

    const got = await api(s, "GET", "/api/chat/threads/t/messages/m2");
    assert.equal(got.body.data.attributes.content, "hi");
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/t/messages/ghost"), 404);

    const edited = await api(
      s,
      "PATCH",
      "/api/chat/threads/t/messages/m2/edit",
      doc("messages", { content: { text: "new" } }),
    );
    assert.equal(edited.status, 200);
    assert.deepEqual(edited.body.data.attributes.content, { text: "new" });
    assert.equal(typeof edited.body.data.attributes.edited_at, "number");
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/t/messages/m2/edit", doc("messages", {})),
      422,
    );
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/messages/ghost/edit",
        doc("messages", { content: "x" }),
      ),
      404,
    );

    const soft = await api(s, "PATCH", "/api/chat/threads/t/messages/m3/delete");
    assert.equal(soft.status, 200);
    assert.equal(soft.body.data.attributes.content, null);
    assert.equal(typeof soft.body.data.attributes.deleted_at, "number");
    assert.equal(await statusOf(s, "PATCH", "/api/chat/threads/t/messages/m3/delete"), 409);
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/messages/m3/edit",
        doc("messages", { content: "x" }),
      ),
      409,
    );
    assert.equal(
      (await api(s, "GET", "/api/chat/threads/t/messages/m3")).body.data.attributes.deleted_at !==
        null,
      true,
    );

    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/t/messages/m4"), 204);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/t/messages/m4"), 404);
    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/t/messages/m4"), 404);

    // every write above went through the thread log
    const thread = await api(s, "GET", "/api/chat/threads/t");
    assert.equal(thread.body.data.attributes.log_id, 1 + 5 + 1 + 1 + 1);

    // archived threads refuse new messages
    await api(s, "PATCH", "/api/chat/threads/t/archive");
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/messages",
        doc("messages", { role: "user" }, { id: "late" }),
      ),
      409,
    );
  });
});

Deno.test("chat REST participants and reactions: add, 409 duplicates, mark-read, role, remove, react, unreact", async () => {
  await withInProcess(async (s) => {
    await makeThread(s, "t");
    await makeMessage(s, "t", "m1");
    const pa = await api(
      s,
      "POST",
      "/api/chat/threads/t/participants",
      doc("participants", { client_id: "alice", display_name: "Alice" }, { id: "p-a" }),
    );
    assert.equal(pa.status, 201);
    assert.equal(pa.body.data.attributes.role, "member");
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/participants",
        doc("participants", { client_id: "alice" }),
      ),
      409,
    );
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/participants",
        doc("participants", {}, { id: "p-a" }),
      ),
      409,
    );
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/participants",
        doc("participants", { role: "king" }),
      ),
      422,
    );
    assert.equal(
      await statusOf(s, "POST", "/api/chat/threads/ghost/participants", doc("participants", {})),
      404,
    );
    for (const c of ["bob", "carol"]) {
      assert.equal(
        await statusOf(
          s,
          "POST",
          "/api/chat/threads/t/participants",
          doc("participants", { client_id: c }),
        ),
        201,
      );
    }
    const l1 = await api(s, "GET", "/api/chat/threads/t/participants?page[size]=2");
    assert.equal(l1.body.data.length, 2);
    const l2 = await api(s, "GET", l1.body.links.next);
    assert.deepEqual(l2.body.data.map((p: any) => p.attributes.client_id), ["carol"]);

    const read = await api(
      s,
      "PATCH",
      "/api/chat/threads/t/participants/p-a/mark-read",
      doc("participants", { last_read_message_id: "m1" }),
    );
    assert.equal(read.status, 200);
    assert.equal(read.body.data.attributes.last_read_message_id, "m1");
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/participants/p-a/mark-read",
        doc("participants", { last_read_message_id: "ghost" }),
      ),
      422,
    );
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/participants/ghost/mark-read",
        doc("participants", { last_read_message_id: "m1" }),
      ),
      404,
    );
    const role = await api(
      s,
      "PATCH",
      "/api/chat/threads/t/participants/p-a/role",
      doc("participants", { role: "admin" }),
    );
    assert.equal(role.body.data.attributes.role, "admin");
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/participants/p-a/role",
        doc("participants", { role: "x" }),
      ),
      422,
    );

    const react = (emoji: string, pid = "p-a") =>
      api(
        s,
        "POST",
        "/api/chat/threads/t/messages/m1/reactions",
        doc("reactions", { emoji }, {
          relationships: { participant: { data: { type: "participants", id: pid } } },
        }),
      );
    const r1 = await react("👍");
    assert.equal(r1.status, 201);
    assert.equal(r1.body.data.attributes.emoji, "👍");
    assert.equal((await react("👍")).status, 409);
    assert.equal((await react("🎉")).status, 201);
    assert.equal((await react("👍", "ghost")).status, 422);
    assert.equal(
      await statusOf(s, "POST", "/api/chat/threads/t/messages/m1/reactions", doc("reactions", {})),
      422,
    );
    assert.equal(
      await statusOf(
        s,
        "POST",
        "/api/chat/threads/t/messages/ghost/reactions",
        doc("reactions", { emoji: "x", participant_id: "p-a" }),
      ),
      404,
    );
    const list = await api(s, "GET", "/api/chat/threads/t/messages/m1/reactions?page[size]=1");
    assert.equal(list.body.data.length, 1);
    assert.equal((await api(s, "GET", list.body.links.next)).body.data[0].attributes.emoji, "🎉");
    assert.equal(
      await statusOf(s, "DELETE", `/api/chat/threads/t/messages/m1/reactions/${r1.body.data.id}`),
      204,
    );
    assert.equal(
      await statusOf(s, "DELETE", `/api/chat/threads/t/messages/m1/reactions/${r1.body.data.id}`),
      404,
    );
    assert.equal((await react("👍")).status, 201);

    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/t/participants/p-a"), 204);
    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/t/participants/p-a"), 404);
  });
});
