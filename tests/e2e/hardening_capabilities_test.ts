// Issue 12 items 7 and 8: a trailing `*` after any prefix is a prefix grant, at the join and
// at issuance (`POST /api/auth`). Object types without `/` or `:` and thread ids holding `*`
// are checked in-process in tests/harness/capabilities_test.ts.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";
import { call, token } from "../pubsub/helpers.ts";

Deno.test("capabilities: prefix grants on channels; a * inside a grant is malformed at issuance", async () => {
  const server = await startInProcess();
  const sock = await RawSocket.connect(server.wsUrl("key1"));
  try {
    const app = server.apps[0];
    const tk = await token(server, app, sock.socketId, ["channel:subscribe:private-user-42-*"]);
    assert.equal((await sock.join("pubsub:key1:private-user-42-inbox", { auth: tk })).status, "ok");
    assert.deepEqual(
      (await sock.join("pubsub:key1:private-user-43-inbox", { auth: tk })).response,
      { reason: "forbidden: missing channel:subscribe:private-user-43-inbox" },
    );
    const issue = (capabilities: string[]) =>
      call(server, "POST", "/api/auth", { socket_id: sock.socketId, client_id: "u", capabilities });
    assert.equal((await issue(["channel:subscribe:private-*"])).status, 200);
    assert.equal((await issue(["channel:subscribe:a*b"])).status, 422);
    assert.equal((await issue(["object:read:order/*/x"])).status, 422);
  } finally {
    await sock.close();
    await server.stop();
  }
});
