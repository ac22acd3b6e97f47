// Issue 12 items 2 and 10: values one wire format cannot carry never reach a product, and the
// frame limit counts bytes. Runs against the source server and, with SWITCHBOARD_BIN, the binary.
import assert from "node:assert/strict";
import { Packr } from "msgpackr";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer } from "../helpers/server.ts";
import { token } from "../pubsub/helpers.ts";

const BIG = 2n ** 63n + 5n; // needs a 64-bit MessagePack integer (uint 64)
const AS_NUMBER = Number(BIG); // what JSON.parse makes of the same literal

Deno.test("codec: a 64-bit MessagePack integer is carried as a number in a space, a presence channel and a thread", async () => {
  const server = await startServer();
  const mp = await RawSocket.connect(server.wsUrl("key1", "&format=msgpack"));
  const js = await RawSocket.connect(server.wsUrl("key1"));
  try {
    // Space: member data and a relayed push.
    const space = "spaces:key1:room-64";
    assert.equal((await mp.join(space, { client_id: "m", data: { n: BIG } })).status, "ok");
    const spaceJoin = await js.join(space, {});
    assert.equal(spaceJoin.status, "ok");
    const members = spaceJoin.response.members as { data: { n: number } | null }[];
    assert.deepEqual(members.map((m) => m.data?.n ?? null).sort(), [AS_NUMBER, null].sort());
    const mpJoinRef = mp.events(space, "phx_reply")[0][0]!;
    assert.equal((await mp.push(space, mpJoinRef, "cursor", { x: BIG })).status, "ok");
    const relayed = await js.waitFor((f) => f[2] === space && f[3] === "cursor");
    assert.deepEqual(relayed[4], { x: AS_NUMBER });

    // Presence: user_info with a 64-bit integer; a JSON member sees it, and leaves cleanly.
    const presence = "pubsub:key1:presence-64";
    const caps = [`channel:subscribe:${"presence-64"}`, `channel:presence:${"presence-64"}`];
    const mpAuth = await token(server, server.apps[0], mp.socketId, caps, "u1");
    const joined = await mp.join(presence, {
      auth: mpAuth,
      channel_data: { user_id: "u1", user_info: { score: BIG } },
    });
    assert.equal(joined.status, "ok");
    const jsAuth = await token(server, server.apps[0], js.socketId, caps, "u2");
    const seen = await js.join(presence, { auth: jsAuth, channel_data: { user_id: "u2" } });
    assert.equal(seen.status, "ok");
    const list =
      (seen.response.presence as { members: { user_id: string; user_info?: unknown }[] }).members;
    assert.deepEqual(list.find((m) => m.user_id === "u1")?.user_info, { score: AS_NUMBER });

    // Thread: a live send with a 64-bit integer in its content; JSON joins and REST reads work,
    // also after a restart.
    const thread = "chat:key1:thread-64";
    const tj = await mp.join(thread, { client_id: "alice" });
    assert.equal(tj.status, "ok");
    const sent = await mp.push(thread, tj.joinRef, "send", {
      content: { text: "hi", n: BIG },
      messageId: "m-64",
      runId: "r-64",
      parentId: null,
    });
    assert.equal(sent.status, "ok", JSON.stringify(sent));
    const view = await js.join(thread, { client_id: "bob" });
    assert.equal(view.status, "ok", JSON.stringify(view));
    const msg = (view.response.messages as { messageId: string; content: { n: number } }[])
      .find((m) => m.messageId === "m-64");
    assert.equal(msg?.content.n, AS_NUMBER);
  } finally {
    await mp.close();
    await js.close();
    await server.stop();
  }
  const again = await startServer({ dataDir: server.dataDir });
  try {
    const rest = await fetch(`${again.baseUrl}/api/chat/threads/thread-64/messages`, {
      headers: again.headers(),
    });
    assert.equal(rest.status, 200);
    const body = await rest.json() as { data: { attributes: { content: { n: number } } }[] };
    assert.equal(body.data[0].attributes.content.n, AS_NUMBER);
  } finally {
    await again.stop();
  }
});

Deno.test("codec: NaN, binary and date values are refused on the push's own ref, and the socket goes on", async () => {
  const server = await startServer();
  const mp = await RawSocket.connect(server.wsUrl("key1", "&format=msgpack"));
  try {
    const space = "spaces:key1:values";
    const j = await mp.join(space, {});
    assert.equal(j.status, "ok");
    for (
      const [value, reason] of [
        [NaN, "invalid payload: numbers must be finite"],
        [Infinity, "invalid payload: numbers must be finite"],
        [
          new Uint8Array([1, 2]),
          "invalid payload: binary, dates and other extension types are not supported",
        ],
        [new Date(0), "invalid payload: binary, dates and other extension types are not supported"],
      ] as const
    ) {
      const reply = await mp.push(space, j.joinRef, "cursor", { v: value });
      assert.deepEqual(reply, { status: "error", response: { reason } });
    }
    // A join whose params hold such a value is refused the same way, on the join's ref.
    const refused = await mp.join("spaces:key1:other", { data: { v: NaN } });
    assert.deepEqual(refused.response, { reason: "invalid payload: numbers must be finite" });
    assert.equal((await mp.push(space, j.joinRef, "cursor", { v: 1 })).status, "ok");
  } finally {
    await mp.close();
    await server.stop();
  }
});

Deno.test("codec: the 1 MiB frame limit counts UTF-8 bytes, not UTF-16 units", async () => {
  const server = await startServer();
  const s = await RawSocket.connect(server.wsUrl("key1"));
  try {
    // 400,000 three-byte characters: 1.2 MB on the wire, 400,000 UTF-16 units.
    s.sendRaw(
      JSON.stringify([null, "1", "spaces:key1:x", "phx_join", { d: "日".repeat(400_000) }]),
    );
    const err = await s.waitFor((f) => f[3] === "phx_error");
    assert.deepEqual(err[4], { reason: "frame too large: limit is 1048576 bytes" });
    // Just under the limit in bytes is accepted.
    const ok = await s.join("spaces:key1:x", { d: "日".repeat(340_000) });
    assert.equal(ok.status, "ok");
  } finally {
    await s.close();
    await server.stop();
  }
});

Deno.test("codec: a msgpack-encoded 64-bit integer is readable by a MessagePack client as a number", async () => {
  const server = await startServer();
  const a = await RawSocket.connect(server.wsUrl("key1", "&format=msgpack"));
  const b = await RawSocket.connect(server.wsUrl("key1", "&format=msgpack"));
  try {
    const space = "spaces:key1:mp";
    const ja = await a.join(space, {});
    await b.join(space, {});
    // Hand-encode a frame whose payload holds a negative 64-bit integer (int 64).
    const packr = new Packr({ useRecords: false, mapsAsObjects: true });
    a.sendRaw(packr.pack([ja.joinRef, "99", space, "cursor", { n: -(2n ** 62n) }]));
    const got = await b.waitFor((f) => f[2] === space && f[3] === "cursor");
    assert.equal(typeof got[4].n, "number");
    assert.equal(got[4].n, -(2 ** 62));
  } finally {
    await a.close();
    await b.close();
    await server.stop();
  }
});

Deno.test("codec: an object key named __proto__ is refused everywhere instead of stored renamed", async () => {
  const server = await startServer();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  const body = '{"value":{"a":1,"__proto__":{"x":1}}}';
  try {
    const put = await fetch(`${server.baseUrl}/api/v1/objects/app-1/t/proto/slot`, {
      method: "PUT",
      headers: server.headers(),
      body,
    });
    assert.deepEqual([put.status, await put.json()], [422, {
      error: 'a key named "__proto__" is not supported',
    }]);
    const trig = await fetch(`${server.baseUrl}/api/apps/app-1/trigger`, {
      method: "POST",
      headers: server.headers(),
      body: '{"channel":"c","event":"e","data":{"__proto__":1}}',
    });
    assert.equal(trig.status, 422);
    await trig.body?.cancel();
    // A value that merely mentions the word is fine.
    const ok = await fetch(`${server.baseUrl}/api/v1/objects/app-1/t/proto/slot`, {
      method: "PUT",
      headers: server.headers(),
      body: '{"value":"__proto__"}',
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const j = await sock.join("spaces:key1:proto", {});
    sock.sendRaw(`["${j.joinRef}","9","spaces:key1:proto","cursor",{"p":{"__proto__":{}}}]`);
    const reply = await sock.waitFor((f) => f[1] === "9");
    assert.deepEqual(reply[4], {
      status: "error",
      response: { reason: 'invalid payload: a key named "__proto__" is not supported' },
    });
  } finally {
    await sock.close();
    await server.stop();
  }
});
