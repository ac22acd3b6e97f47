// Failures reach the app loudly (docs/protocol.md "Refused connections"): a wrong app key is
// refused at the upgrade with 401 (no socket), the client learns the reason over plain HTTP,
// rejects what waits, fires its error event and stops reconnecting; the server logs it once
// per window. A publish over the frame limit is refused at once; the server's own refusal of
// a payload reaches the promise; timeouts say what they waited for.
import assert from "node:assert/strict";
import { ChatClient, ConnectionError, RealtimeClient } from "../../sdk/client/mod.ts";
import { startServer } from "../helpers/server.ts";
import { until } from "../helpers/until.ts";
import { sdkFor } from "../pubsub/helpers.ts";

/** The global WebSocket, counting the connections made through it. */
function countingWebSocket() {
  const made = { count: 0 };
  const Real = globalThis.WebSocket;
  class Counting extends Real {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      made.count++;
    }
  }
  return { made, Counting };
}

Deno.test({
  name: "refusals: unknown app key, plain GET of the socket URL, publish limits, timeouts",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await startServer({
    apps: [
      { id: "app-1", key: "key1", secret: "secret1", enable_client_messages: true },
    ],
  });
  const endpoint = `ws://127.0.0.1:${server.port}/socket`;
  try {
    await t.step(
      "the upgrade is refused with 401 and no socket; a plain GET says why",
      async () => {
        const upgrade = await fetch(`${server.baseUrl}/socket/websocket?app_key=nope&vsn=2.0.0`, {
          headers: { upgrade: "websocket", connection: "Upgrade", "sec-websocket-version": "13" },
        });
        assert.equal(upgrade.status, 401);
        assert.equal((await upgrade.json()).reason, "unknown app key");
        const probe = await fetch(`${server.baseUrl}/socket/websocket?app_key=nope&vsn=2.0.0`);
        assert.equal(probe.status, 401);
        assert.equal(probe.headers.get("access-control-allow-origin"), "*");
        assert.deepEqual(await probe.json(), {
          error: "unknown app key",
          reason: "unknown app key",
          status: 401,
        });
        const missing = await fetch(`${server.baseUrl}/socket/websocket?vsn=2.0.0`);
        assert.equal(missing.status, 401);
        assert.equal((await missing.json()).reason, "missing app_key");
        const fine = await fetch(`${server.baseUrl}/socket/websocket?app_key=key1&vsn=2.0.0`);
        assert.equal(fine.status, 426);
        assert.equal((await fine.json()).reason, "websocket upgrade required");
      },
    );

    await t.step(
      "a wrong key: ready rejects, the error event fires, no reconnect loop",
      async () => {
        const { made, Counting } = countingWebSocket();
        const client = new RealtimeClient("nope", {
          endpoint,
          transport: Counting,
          reconnectAfterMs: 50,
        });
        const errors: ConnectionError[] = [];
        client.on("error", (e) => errors.push(e));
        const sub = client.subscribe("news");
        const events: string[] = [];
        sub.bindAll((event) => events.push(event));
        const err = await sub.ready.then(() => null, (e) => e);
        assert.ok(err instanceof ConnectionError, String(err));
        assert.equal(err.reason, "unknown app key");
        assert.equal(err.status, 401);
        assert.equal(err.fatal, true);
        assert.match(err.message, /unknown app key.*401.*Not reconnecting/);
        assert.equal(errors.length, 1);
        assert.equal(errors[0], err);
        assert.deepEqual(events, ["switchboard:error"]);
        await assert.rejects(client.socketIdReady(), /unknown app key/);
        // A subscription made after the refusal fails at once too.
        await assert.rejects(client.subscribe("other").ready, /unknown app key/);
        assert.equal(client.error, err);
        const attempts = made.count;
        // With a 50 ms back-off, a loop would have made several more attempts by now.
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(made.count, attempts, "no reconnect after the refusal");
        client.disconnect();
      },
    );

    await t.step("the server logs the refusal, rate-limited", async () => {
      await until(
        () => Promise.resolve(server.output()),
        (out) => /upgrade refused: unknown app key/.test(out),
        "the log line",
      );
      const lines = server.output().split("\n").filter((l) =>
        l.includes("upgrade refused: unknown app key")
      );
      assert.ok(lines.length >= 1 && lines.length <= 2, lines.join("\n"));
    });

    await t.step("ChatClient with a wrong key: connect rejects with the reason", async () => {
      const chat = new ChatClient("nope", { endpoint });
      const errors: ConnectionError[] = [];
      chat.on("error", (e) => errors.push(e));
      const err = await chat.connect("t1", { clientId: "a" }).then(() => null, (e) => e);
      assert.ok(err instanceof ConnectionError, String(err));
      assert.equal(err.reason, "unknown app key");
      assert.equal(errors.length, 1);
      chat.disconnect();
    });

    await t.step("an object of a refused client reports the refusal", async () => {
      const client = new RealtimeClient("nope", { endpoint });
      const obj = client.object("counter", "c1");
      const reason = await new Promise<string>((resolve) => obj.on("error", resolve));
      assert.equal(reason, "unknown app key");
      obj.close();
      client.disconnect();
    });

    await t.step(
      "publish: over the frame limit at once; the server's refusal; a timeout",
      async () => {
        const client = new RealtimeClient("key1", { endpoint, timeout: 1000 });
        const sub = client.subscribe("news");
        await sub.ready;
        const big = { blob: "x".repeat(2_000_000) };
        const tooBig = await sub.publish("big", big).then(() => null, (e) => e);
        assert.match(tooBig.message, /frame too large: limit is 1048576 bytes/);
        assert.match(tooBig.reason, /^frame too large: limit is 1048576 bytes/);
        // A public channel's token grants no publish: the server's reason reaches the promise.
        const refused = await sub.publish("ev", { a: 1 }).then(() => null, (e) => e);
        assert.equal(refused.reason, "Channel mode does not permit publishing");
        client.disconnect();

        // With publish granted: a payload over the app's limit is the server's refusal.
        const sdk = sdkFor(server);
        const open = new RealtimeClient("key1", {
          endpoint,
          timeout: 1000,
          authCallback: (params, done) => {
            sdk.authorize(params.socket_id, {
              channels: [params.channel_name],
              publish: [params.channel_name],
            }, "me").then((r) => done(null, r), (e) => done(e));
          },
        });
        const mine = open.subscribe("private-news");
        await mine.ready;
        const over = await mine.publish("ev", { blob: "y".repeat(20_000) }).then(
          () => null,
          (e) => e,
        );
        assert.match(over.reason, /payload larger than 10240 bytes/);
        // A push the server never answers (the process is stopped): the timeout says so.
        Deno.kill(server.pid, "SIGSTOP");
        try {
          const late = await mine.publish("ev", { a: 1 }).then(() => null, (e) => e);
          assert.equal(late.reason, "timeout");
          assert.match(
            late.message,
            /publish of ev on private-news timed out: no reply from the server in 1000 ms/,
          );
        } finally {
          Deno.kill(server.pid, "SIGCONT");
        }
        open.disconnect();
      },
    );
  } finally {
    await server.stop();
  }
});
