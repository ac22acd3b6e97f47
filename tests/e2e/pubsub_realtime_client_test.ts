import assert from "node:assert/strict";
import { RealtimeClient } from "../../sdk/client/mod.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { sdkFor, trigger } from "../pubsub/helpers.ts";

async function until(cond: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("RealtimeClient: private channel over forced reconnects sees every serial once, in order", async () => {
  const server = await startInProcess();
  const sdk = sdkFor(server);
  const socketIds = new Set<string>();
  const client = new RealtimeClient("key1", {
    endpoint: server.baseUrl.replace("http", "ws") + "/socket/websocket",
    reconnectAfterMs: 20,
    authCallback: (params, done) => {
      socketIds.add(params.socket_id);
      sdk.authorize(params.socket_id, {
        channels: [params.channel_name],
        publish: [params.channel_name],
      }, "me")
        .then((r) => done(null, r), (e) => done(e));
    },
  });
  try {
    const sub = client.subscribe("private-rc");
    const seen: number[] = [];
    sub.bind("ev", (_data, meta) => seen.push(meta.serial ?? -1));
    assert.deepEqual(await sub.ready, { serial: 0, epoch: "0" });
    let n = 0;
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++) {
        assert.equal((await trigger(server, "private-rc", "ev", { n: ++n })).status, 200);
      }
      await until(() => seen.length >= n, `serial ${n}`);
      (client.socket as any).conn.close(); // drop the transport: phoenix reconnects by itself
      assert.equal((await trigger(server, "private-rc", "ev", { n: ++n })).status, 200); // while down (or just back)
    }
    await until(() => seen.length >= n, `serial ${n}`);
    assert.deepEqual(seen, Array.from({ length: n }, (_, i) => i + 1));
    assert.ok(socketIds.size >= 2, "a fresh token was fetched for the new socket");

    // Client publish through the SDK, and a refusal surfaced as a rejected promise.
    await until(() => client.socketId !== null, "reconnect");
    await sub.ready;
    const own = await sub.publish("client-hi", { a: 1 });
    assert.equal(own.serial, n + 1);
    const open = client.subscribe("open-ch");
    await open.ready;
    await assert.rejects(open.publish("client-x", {}), /Channel mode does not permit publishing/);
    const refused = client.subscribe("private-other", { auth: false });
    await assert.rejects(refused.ready, /auth required for private\/presence channels/);
    sub.unsubscribe();
  } finally {
    client.disconnect();
    await server.stop();
  }
});

Deno.test("RealtimeClient: presence members via authEndpoint, msgpack frames", async () => {
  const server = await startInProcess();
  const sdk = sdkFor(server);
  const auth = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const body = await req.json();
    assert.equal(req.headers.get("x-test"), "1");
    return Response.json(
      await sdk.authenticate(body.socket_id, body.channel_name, {
        user_id: body.user,
        user_info: { n: body.user },
      }),
    );
  });
  const mk = (user: string) =>
    new RealtimeClient("key1", {
      endpoint: server.baseUrl.replace("http", "ws") + "/socket",
      messageFormat: "msgpack",
      authEndpoint: `http://127.0.0.1:${auth.addr.port}/auth`,
      authHeaders: { "x-test": "1" },
      authParams: { user },
    });
  const a = mk("a");
  const b = mk("b");
  try {
    const sa = a.subscribe("presence-p");
    await sa.ready;
    const joins: string[] = [];
    sa.bind("presence:join", (m) => joins.push(m.user_id));
    const sb = b.subscribe("presence-p");
    const reply = await sb.ready;
    assert.equal(reply.presence?.count, 2);
    assert.deepEqual([...sb.members.keys()].sort(), ["a", "b"]);
    await until(() => sa.members.has("b"), "b in a's members");
    assert.deepEqual(joins, ["b"]);
    const got: unknown[] = [];
    sb.bind("news", (d) => got.push(d));
    await trigger(server, "presence-p", "news", { bin: "ok" });
    await until(() => got.length === 1, "msgpack event");
    assert.deepEqual(got, [{ bin: "ok" }]);
    b.disconnect();
    await until(() => !sa.members.has("b"), "b left");
  } finally {
    a.disconnect();
    b.disconnect();
    await auth.shutdown();
    await server.stop();
  }
});

Deno.test("RealtimeClient.object() delegates to ObjectSubscription with a token from authCallback", async () => {
  const server = await startInProcess();
  const sdk = sdkFor(server);
  const client = new RealtimeClient("key1", {
    endpoint: server.baseUrl.replace("http", "ws") + "/socket",
    authCallback: async (params) =>
      (await sdk.authenticateObject(
        params.socket_id,
        String(params.object_type),
        String(params.object_key),
      )).auth,
  });
  try {
    const put = await fetch(`${server.baseUrl}/api/v1/objects/app-1/doc/1/title`, {
      method: "PUT",
      headers: server.headers(),
      body: JSON.stringify({ value: "hello" }),
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    const obj = client.object("doc", "1");
    await obj.whenSynced();
    assert.deepEqual(obj.state, { title: "hello" });
    obj.close();
  } finally {
    client.disconnect();
    await server.stop();
  }
});

Deno.test("RealtimeClient: publish on a refused subscription rejects instead of hanging", async () => {
  const server = await startInProcess();
  const client = new RealtimeClient("key1", {
    endpoint: server.baseUrl.replace("http", "ws") + "/socket",
  });
  try {
    const sub = client.subscribe("private-x", { auth: false });
    await assert.rejects(
      sub.publish("client-a", {}),
      /auth required for private\/presence channels/,
    );
  } finally {
    client.disconnect();
    await server.stop();
  }
});
