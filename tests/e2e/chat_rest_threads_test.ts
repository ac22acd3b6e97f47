import assert from "node:assert/strict";
import { withInProcess } from "../helpers/in_process.ts";
import { api, doc, makeThread, statusOf } from "../chat_rest/helpers.ts";

Deno.test("chat REST threads: create, get, list with pagination and filters, patch, delete", async () => {
  await withInProcess(async (s) => {
    const created = await api(
      s,
      "POST",
      "/api/chat/threads",
      doc("threads", { title: "One", metadata: { a: 1 } }, { id: "th-1" }),
    );
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("content-type"), "application/vnd.api+json");
    assert.equal(created.headers.get("location"), "/api/chat/threads/th-1");
    assert.equal(created.body.data.type, "threads");
    assert.deepEqual(created.body.data.attributes.metadata, { a: 1 });
    assert.equal(created.body.data.attributes.status, "open");
    assert.equal(created.body.data.attributes.log_id, 1);

    // generated id, plain application/json accepted
    const gen = await api(s, "POST", "/api/chat/threads", doc("threads"), {
      "Content-Type": "application/json",
    });
    assert.equal(gen.status, 201);
    assert.ok(gen.body.data.id.length > 0);

    assert.equal(
      await statusOf(s, "POST", "/api/chat/threads", doc("threads", {}, { id: "th-1" })),
      409,
    );
    for (const id of ["th-2", "th-3", "th-4"]) await makeThread(s, id);

    const got = await api(s, "GET", "/api/chat/threads/th-1");
    assert.equal(got.status, 200);
    assert.equal(got.body.data.attributes.title, "One");
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/nope"), 404);

    // pagination across pages, forwards and backwards
    const p1 = await api(s, "GET", "/api/chat/threads?page[size]=2");
    assert.deepEqual(p1.body.data.map((t: any) => t.id), ["th-1", gen.body.data.id]);
    assert.equal(p1.body.links.prev, null);
    const p2 = await api(s, "GET", p1.body.links.next);
    assert.deepEqual(p2.body.data.map((t: any) => t.id), ["th-2", "th-3"]);
    const p3 = await api(s, "GET", p2.body.links.next);
    assert.deepEqual(p3.body.data.map((t: any) => t.id), ["th-4"]);
    assert.equal(p3.body.links.next, null);
    const back = await api(s, "GET", p3.body.links.prev);
    assert.deepEqual(back.body.data.map((t: any) => t.id), ["th-2", "th-3"]);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads?page[size]=0"), 400);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads?page[size]=101"), 400);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads?page[after]=ghost"), 400);

    // patch
    const patched = await api(
      s,
      "PATCH",
      "/api/chat/threads/th-2",
      doc("threads", { title: "Two" }),
    );
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.attributes.title, "Two");
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/th-2", doc("threads", { title: 7 })),
      422,
    );
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/ghost", doc("threads", { title: "x" })),
      404,
    );

    // filters
    await api(s, "PATCH", "/api/chat/threads/th-3/resolve");
    const resolved = await api(s, "GET", "/api/chat/threads?filter[status]=resolved");
    assert.deepEqual(resolved.body.data.map((t: any) => t.id), ["th-3"]);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads?filter[status]=bogus"), 400);
    await api(
      s,
      "POST",
      "/api/chat/threads/th-4/participants",
      doc("participants", { client_id: "alice" }),
    );
    const byP = await api(
      s,
      "GET",
      "/api/chat/threads?filter[participant]=alice&include=participants",
    );
    assert.deepEqual(byP.body.data.map((t: any) => t.id), ["th-4"]);
    assert.equal(byP.body.included[0].attributes.client_id, "alice");
    assert.equal(byP.body.data[0].relationships.participants.data[0].id, byP.body.included[0].id);

    // delete
    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/th-4"), 204);
    assert.equal(await statusOf(s, "GET", "/api/chat/threads/th-4"), 404);
    assert.equal(await statusOf(s, "DELETE", "/api/chat/threads/th-4"), 404);
  });
});

Deno.test("chat REST threads: status transitions, illegal ones answer 409", async () => {
  await withInProcess(async (s) => {
    const bot = await api(
      s,
      "POST",
      "/api/chat/bots",
      doc("bots", { name: "Helper" }, { id: "b1" }),
    );
    assert.equal(bot.status, 201);
    await makeThread(s, "t");
    const assign = await api(
      s,
      "PATCH",
      "/api/chat/threads/t/assign-bot",
      doc("threads", undefined, {
        relationships: { bot: { data: { type: "bots", id: "b1" } } },
      }),
    );
    assert.equal(assign.status, 200);
    assert.equal(assign.body.data.attributes.status, "bot");
    assert.deepEqual(assign.body.data.relationships.bot.data, { type: "bots", id: "b1" });
    assert.equal((await api(s, "GET", "/api/chat/threads?filter[bot]=b1")).body.data.length, 1);
    // unknown bot -> 422, missing bot -> 422
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/assign-bot",
        doc("threads", { bot_id: "zz" }),
      ),
      422,
    );
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/t/assign-bot", doc("threads")),
      422,
    );

    const handoff = await api(s, "PATCH", "/api/chat/threads/t/handoff");
    assert.equal(handoff.body.data.attributes.status, "human");
    assert.equal(await statusOf(s, "PATCH", "/api/chat/threads/t/handoff"), 409);
    assert.equal(
      (await api(s, "PATCH", "/api/chat/threads/t/resolve")).body.data.attributes.status,
      "resolved",
    );
    assert.equal(await statusOf(s, "PATCH", "/api/chat/threads/t/resolve"), 409);
    assert.equal(await statusOf(s, "PATCH", "/api/chat/threads/t/handoff"), 409);
    // reopen through PATCH status=open; other statuses through PATCH are 422
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/t", doc("threads", { status: "human" })),
      422,
    );
    const reopened = await api(
      s,
      "PATCH",
      "/api/chat/threads/t",
      doc("threads", { status: "open" }),
    );
    assert.equal(reopened.body.data.attributes.status, "open");
    assert.equal(
      await statusOf(s, "PATCH", "/api/chat/threads/t", doc("threads", { status: "open" })),
      200,
    );
    assert.equal(
      (await api(s, "PATCH", "/api/chat/threads/t/archive")).body.data.attributes.status,
      "archived",
    );
    for (const action of ["archive", "resolve", "handoff"]) {
      const r = await api(s, "PATCH", `/api/chat/threads/t/${action}`);
      assert.equal(r.status, 409);
      assert.equal(r.body.errors[0].status, "409");
    }
    assert.equal(
      await statusOf(
        s,
        "PATCH",
        "/api/chat/threads/t/assign-bot",
        doc("threads", { bot_id: "b1" }),
      ),
      409,
    );
    assert.equal(await statusOf(s, "PATCH", "/api/chat/threads/ghost/resolve"), 404);
  });
});

Deno.test("chat REST: 401 without credentials, 415 for other media types, 400 malformed JSON, 409 type mismatch", async () => {
  await withInProcess(async (s) => {
    const paths = ["/api/chat/threads", "/api/chat/bots", "/api/chat/threads/x/messages"];
    for (const p of paths) {
      const r = await api(s, "GET", p, undefined, { "X-App-Secret": "wrong" });
      assert.equal(r.status, 401);
      assert.deepEqual(r.body, { errors: [{ status: "401", title: "Unauthorized" }] });
    }
    const noKey = await fetch(`${s.baseUrl}/api/chat/threads`);
    assert.equal(noKey.status, 401);
    await noKey.body?.cancel();
    const r415 = await api(s, "POST", "/api/chat/threads", "title=x", {
      "Content-Type": "text/plain",
    });
    assert.equal(r415.status, 415);
    assert.equal(r415.body.errors[0].status, "415");
    const bad = await api(s, "POST", "/api/chat/threads", "{nope");
    assert.equal(bad.status, 400);
    const mismatch = await api(s, "POST", "/api/chat/threads", doc("messages", {}));
    assert.equal(mismatch.status, 409);
    assert.equal(mismatch.body.errors[0].source.pointer, "/data/type");
    const missing = await api(s, "POST", "/api/chat/threads", {});
    assert.equal(missing.status, 422);
    assert.equal(missing.body.errors[0].source.pointer, "/data");
    assert.equal(await statusOf(s, "GET", "/api/chat/nothing-here"), 404);
  });
});
