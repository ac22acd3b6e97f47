// A malformed endpoint (the WebSocket constructor refuses the URL) is a fatal connection
// error the app hears about, never an unhandled rejection inside the SDK.
import assert from "node:assert/strict";
import { ChatClient, ConnectionError, RealtimeClient } from "../../sdk/client/mod.ts";
import { unhandledDuring } from "../helpers/unhandled.ts";

const BAD = "ws://bad host:1/socket"; // a space: no WebSocket accepts this URL

Deno.test("a malformed endpoint: ChatClient.connect rejects with a fatal ConnectionError, no unhandled rejection", async () => {
  const chat = new ChatClient("key1", { endpoint: BAD });
  try {
    const errors: ConnectionError[] = [];
    chat.on("error", (e) => errors.push(e));
    const unhandled = await unhandledDuring(async () => {
      const err = await chat.connect("t1", { clientId: "a" }).then(
        () => assert.fail("connected to a malformed URL"),
        (e) => e,
      );
      assert.ok(err instanceof ConnectionError);
      assert.equal(err.fatal, true);
      assert.match(err.reason, /Invalid URL/);
    });
    assert.deepEqual(unhandled, []);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].fatal, true);
  } finally {
    chat.disconnect();
  }
});

Deno.test("a malformed endpoint: RealtimeClient reports a fatal ConnectionError, no unhandled rejection", async () => {
  const errors: ConnectionError[] = [];
  let rt: RealtimeClient | undefined;
  try {
    const unhandled = await unhandledDuring(async () => {
      rt = new RealtimeClient("key1", { endpoint: BAD });
      rt.on("error", (e) => errors.push(e));
      const err = await rt.socketIdReady().then(
        () => assert.fail("connected to a malformed URL"),
        (e) => e,
      );
      assert.ok(err instanceof ConnectionError);
      assert.equal(err.fatal, true);
    });
    assert.deepEqual(unhandled, []);
    assert.equal(errors.length, 1);
    assert.equal(rt!.error?.fatal, true);
  } finally {
    rt?.disconnect();
  }
});
