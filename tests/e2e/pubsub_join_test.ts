import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startServer, type TestApp } from "../helpers/server.ts";
import { token, trigger } from "../pubsub/helpers.ts";

const OPEN: TestApp = { id: "app-1", key: "key1", secret: "secret1" };
const AUTH: TestApp = { id: "app-2", key: "key2", secret: "secret2", enable_user_authentication: 1 };

Deno.test("pubsub join: each channel kind and app setting accepts or refuses with the spec's reason", async (t) => {
  const server = await startServer({ apps: [OPEN, AUTH] });
  const open = await RawSocket.connect(server.wsUrl("key1"));
  const authed = await RawSocket.connect(server.wsUrl("key2"));
  try {
    await t.step("public channel, auth off: joins without a token, reply carries serial", async () => {
      const r = await open.join("pubsub:key1:news", {});
      assert.equal(r.status, "ok");
      assert.deepEqual(r.response, { serial: 0, epoch: "0" });
    });
    await t.step("name with ':' is one channel", async () => {
      await trigger(server, "a:b:c", "ev", 1);
      const r = await open.join("pubsub:key1:a:b:c", {});
      assert.deepEqual(r.response, { serial: 1, epoch: "0" });
    });
    await t.step("invalid names are invalid topic format", async () => {
      for (const name of ["bad name", "x".repeat(165), "a/b", "ü"]) {
        const r = await open.join(`pubsub:key1:${name}`, {});
        assert.deepEqual(r.response, { reason: "invalid topic format" }, name);
      }
      const ok = await open.join(`pubsub:key1:${"x".repeat(164)}`, {});
      assert.equal(ok.status, "ok");
    });
    await t.step("private and presence need a token", async () => {
      for (const name of ["private-a", "presence-a"]) {
        const r = await open.join(`pubsub:key1:${name}`, {});
        assert.deepEqual(r.response, { reason: "auth required for private/presence channels" });
      }
    });
    await t.step("a bad token is invalid token (garbage, other socket, other app)", async () => {
      assert.deepEqual((await open.join("pubsub:key1:private-a", { auth: "nope" })).response, { reason: "invalid token" });
      const other = await token(server, OPEN, "1.2", ["channel:subscribe:private-a"]);
      assert.deepEqual((await open.join("pubsub:key1:private-a", { auth: other })).response, { reason: "invalid token" });
      const wrongApp = await token(server, AUTH, open.socketId, ["channel:subscribe:private-a"]);
      assert.deepEqual((await open.join("pubsub:key1:private-a", { auth: wrongApp })).response, { reason: "invalid token" });
      // Even on a public channel a presented token must be valid.
      assert.deepEqual((await open.join("pubsub:key1:news2", { auth: "nope" })).response, { reason: "invalid token" });
    });
    await t.step("a token without subscribe is forbidden", async () => {
      const tk = await token(server, OPEN, open.socketId, ["channel:subscribe:private-b"]);
      const r = await open.join("pubsub:key1:private-a", { auth: tk });
      assert.deepEqual(r.response, { reason: "forbidden: missing channel:subscribe:private-a" });
    });
    await t.step("private with a token (exact and wildcard) joins", async () => {
      const tk = await token(server, OPEN, open.socketId, ["channel:subscribe:private-a"]);
      assert.equal((await open.join("pubsub:key1:private-a", { auth: tk })).status, "ok");
      const wild = await token(server, OPEN, open.socketId, ["channel:subscribe:*"]);
      assert.equal((await open.join("pubsub:key1:private-zz", { auth: wild })).status, "ok");
    });
    await t.step("presence needs the presence capability and matching channel_data", async () => {
      const sub = await token(server, OPEN, open.socketId, ["channel:subscribe:presence-a"], "u1");
      assert.deepEqual(
        (await open.join("pubsub:key1:presence-a", { auth: sub, channel_data: '{"user_id":"u1"}' })).response,
        { reason: "forbidden: missing channel:presence:presence-a" },
      );
      const caps = ["channel:subscribe:presence-a", "channel:presence:presence-a"];
      const tk = await token(server, OPEN, open.socketId, caps, "u1");
      assert.deepEqual((await open.join("pubsub:key1:presence-a", { auth: tk })).response, { reason: "invalid channel_data" });
      assert.deepEqual(
        (await open.join("pubsub:key1:presence-a", { auth: tk, channel_data: { user_id: "u2" } })).response,
        { reason: "invalid token" },
      );
      const ok = await open.join("pubsub:key1:presence-a", { auth: tk, channel_data: JSON.stringify({ user_id: "u1", user_info: { n: 1 } }) });
      assert.equal(ok.status, "ok");
      assert.deepEqual(ok.response.presence, { members: [{ user_id: "u1", user_info: { n: 1 } }], count: 1 });
    });
    await t.step("ephemeral joins without serial or replay", async () => {
      const r = await open.join("pubsub:key1:ephemeral-x", { after_serial: 0 });
      assert.deepEqual(r.response, { serial: null, replay: "none" });
    });
    await t.step("app_key mismatch and malformed after_serial", async () => {
      assert.deepEqual((await open.join("pubsub:key2:news", {})).response, { reason: "app_key mismatch" });
      assert.deepEqual((await open.join("pubsub:key1:news", { after_serial: -1 })).response, { reason: "invalid after_serial" });
    });
    await t.step("auth on: public and ephemeral need channel:subscribe", async () => {
      for (const name of ["news", "ephemeral-x"]) {
        const r = await authed.join(`pubsub:key2:${name}`, {});
        assert.deepEqual(r.response, { reason: `forbidden: missing channel:subscribe:${name}` });
        const tk = await token(server, AUTH, authed.socketId, [`channel:subscribe:${name}`]);
        assert.equal((await authed.join(`pubsub:key2:${name}`, { auth: tk })).status, "ok");
      }
      const r = await authed.join("pubsub:key2:private-a", {});
      assert.deepEqual(r.response, { reason: "auth required for private/presence channels" });
    });
  } finally {
    await open.close();
    await authed.close();
    await server.stop();
  }
});
