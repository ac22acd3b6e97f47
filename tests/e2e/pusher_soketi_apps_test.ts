// An apps file written from a Soketi app config starts unchanged (docs/pusher.md "Coming from
// Soketi or Reverb"): its camelCase settings apply as ours, seen through pusher-js and the
// `pusher` library.
import assert from "node:assert/strict";
import { startInProcess, type TestApp } from "../helpers/in_process.ts";
import { client, type Pusher, serverLib, subscribed } from "../pusher/helpers.ts";

/** A Soketi app entry, keys as Soketi's array app manager documents them. */
const SOKETI_APP: TestApp = {
  id: "app-1",
  key: "key1",
  secret: "secret1",
  maxConnections: -1,
  enableClientMessages: true,
  enabled: true,
  maxBackendEventsPerSecond: -1,
  maxClientEventsPerSecond: -1,
  maxReadRequestsPerSecond: -1,
  maxPresenceMembersPerChannel: 1,
  maxPresenceMemberSizeInKb: 2,
  maxChannelNameLength: 200,
  maxEventChannelsAtOnce: 100,
  maxEventNameLength: 200,
  maxEventPayloadInKb: 1,
  maxEventBatchSize: 10,
  webhooks: [],
};

Deno.test("a Soketi app entry starts unchanged and its limits apply", async () => {
  const server = await startInProcess({ apps: [SOKETI_APP] });
  const clients: Pusher[] = [];
  try {
    const a = client(server, { user_id: "alice" });
    const b = client(server, { user_id: "bob" });
    clients.push(a, b);
    await subscribed(a, "presence-room");
    // maxPresenceMembersPerChannel: 1.
    await assert.rejects(subscribed(b, "presence-room"), /"status":4100/);
    // maxEventPayloadInKb: 1 is 1024 bytes of data.
    const lib = serverLib(server);
    assert.equal((await lib.trigger("news", "ev", "x".repeat(1024))).status, 200);
    await assert.rejects(
      lib.trigger("news", "ev", "x".repeat(1025)),
      (e: { status: number; body: string }) =>
        e.status === 413 && /1024 bytes \(max_event_payload_bytes\)/.test(e.body),
    );
  } finally {
    for (const p of clients) p.disconnect();
    await server.stop();
  }
});
