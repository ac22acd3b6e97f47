// A push whose handler fails with a storage refusal is answered with the refusal's reason and
// the channel stays joined; any other failure crashes the channel (phx_error). The socket layer
// recognises the refusal by shape (`isPushRefusal`), so it imports no storage module.
import assert from "node:assert/strict";
import { Connection, type Transport } from "../../lib/socket/connection.ts";
import { Hub } from "../../lib/hub/hub.ts";
import { type ChannelHandler, isPushRefusal } from "../../lib/socket/handler.ts";
import { type App, APP_DEFAULTS } from "../../lib/config/apps.ts";
import { StorageUnavailableError } from "../../lib/store/errors.ts";

const app: App = { id: "a", key: "k", secret: "s", ...APP_DEFAULTS };

class FakeTransport implements Transport {
  sent: unknown[] = [];
  send(data: string | Uint8Array) {
    this.sent.push(typeof data === "string" ? JSON.parse(data) : data);
  }
  close() {}
  bufferedAmount() {
    return 0;
  }
}

const failing: ChannelHandler = {
  join: () =>
    Promise.resolve({
      handleIn: (event) =>
        Promise.reject(
          event === "full"
            ? new StorageUnavailableError("No space left on device")
            : new Error("bug"),
        ),
    }),
};

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("isPushRefusal: a StorageUnavailableError is one; other errors and look-alikes are not", () => {
  assert.equal(isPushRefusal(new StorageUnavailableError("disk full")), true);
  assert.equal(isPushRefusal(new Error("x")), false);
  assert.equal(isPushRefusal({ reason: "x", refusesPush: true }), false, "not an Error");
  assert.equal(isPushRefusal(undefined), false);
});

Deno.test("Connection answers a push refused by storage with its reason and stays joined; a bug crashes the channel", async () => {
  const t = new FakeTransport();
  const conn = new Connection(app, "json", t, {
    hub: new Hub(),
    handlers: { spaces: failing },
    verify: () => Promise.resolve(null),
    maxBufferedBytes: 1000,
  });
  conn.receive(JSON.stringify(["1", "1", "spaces:k:room", "phx_join", {}]));
  await tick();
  conn.receive(JSON.stringify(["1", "2", "spaces:k:room", "full", {}]));
  await tick();
  assert.deepEqual(t.sent.at(-1), [
    "1",
    "2",
    "spaces:k:room",
    "phx_reply",
    { status: "error", response: { reason: "storage unavailable: No space left on device" } },
  ]);
  conn.receive(JSON.stringify(["1", "3", "spaces:k:room", "other", {}]));
  await tick();
  assert.deepEqual(t.sent.at(-1), ["1", "1", "spaces:k:room", "phx_error", {}]);
});
