// The apps file's per-app limits, webhook filter and headers, and Soketi's app settings read
// as ours (docs/limits.md "Per-app limits", docs/pusher.md "Coming from Soketi or Reverb").
import assert from "node:assert/strict";
import { parseApps } from "../../lib/config/apps_file.ts";
import { ConfigError } from "../../lib/config/config.ts";
import { webhookMatches } from "../../lib/config/apps.ts";
import { APP_LIMIT_NAMES, appLimit } from "../../lib/limits.ts";

const app = (over: Record<string, unknown>) => ({
  apps: [{ id: "a", key: "k", secret: "s", ...over }],
});
const refused = (over: Record<string, unknown>, message: string | RegExp) =>
  assert.throws(
    () => parseApps(app(over)),
    (e) =>
      e instanceof ConfigError &&
      (typeof message === "string" ? e.message === message : message.test(e.message)),
  );

Deno.test("per-app limits: Pusher's published limits by default, each settable, whole numbers from 1", () => {
  const [plain] = parseApps(app({}));
  assert.equal(plain.limits, undefined);
  assert.deepEqual(
    Object.fromEntries(APP_LIMIT_NAMES.map((n) => [n, appLimit(plain, n)])),
    {
      max_presence_members_per_channel: 100,
      max_presence_member_bytes: 2048,
      max_channel_name_length: 164,
      max_event_name_length: 200,
      max_event_payload_bytes: 10240,
      max_event_channels: 100,
      max_event_batch_size: 10,
    },
  );
  const [set] = parseApps(app({
    max_presence_members_per_channel: 3,
    max_presence_member_bytes: 50,
    max_channel_name_length: 20,
    max_event_name_length: 12,
    max_event_payload_bytes: 100,
    max_event_channels: 2,
    max_event_batch_size: 2,
  }));
  assert.deepEqual(set.limits, {
    max_presence_members_per_channel: 3,
    max_presence_member_bytes: 50,
    max_channel_name_length: 20,
    max_event_name_length: 12,
    max_event_payload_bytes: 100,
    max_event_channels: 2,
    max_event_batch_size: 2,
  });
  assert.equal(appLimit(set, "max_channel_name_length"), 20);
  // Above the names' own bounds: accepted (Soketi's defaults are 200), the bound applies.
  const [wide] = parseApps(app({ max_channel_name_length: 200, max_event_name_length: 500 }));
  assert.equal(appLimit(wide, "max_channel_name_length"), 164);
  assert.equal(appLimit(wide, "max_event_name_length"), 200);
  for (const bad of [0, -1, 1.5, "10", null]) {
    refused(
      { max_event_batch_size: bad },
      "apps file: apps[0]: max_event_batch_size must be a whole number from 1 (default 10)",
    );
  }
});

Deno.test("webhook entries take filter and headers; the signature headers cannot be set", () => {
  const [a] = parseApps(app({
    webhooks: [{
      url: "http://127.0.0.1:9/h",
      event_types: ["channel_occupied"],
      filter: { channel_name_starts_with: "presence-", channel_name_ends_with: "-room" },
      headers: { "X-Team": "blue", Authorization: "Bearer abc" },
    }],
  }));
  const hook = a.webhooks![0];
  assert.deepEqual(hook.filter, {
    channel_name_starts_with: "presence-",
    channel_name_ends_with: "-room",
  });
  assert.deepEqual(hook.headers, { "X-Team": "blue", Authorization: "Bearer abc" });
  assert.equal(webhookMatches(hook, "presence-chat-room"), true);
  assert.equal(webhookMatches(hook, "presence-chat"), false);
  assert.equal(webhookMatches(hook, "private-chat-room"), false);
  assert.equal(webhookMatches({ url: "", event_types: [] }, "anything"), true);

  const hooks = (extra: Record<string, unknown>) => ({
    webhooks: [{ url: "http://127.0.0.1:9/h", event_types: ["client_event"], ...extra }],
  });
  for (const h of ["X-Pusher-Key", "x-pusher-signature", "Content-Type"]) {
    refused(
      hooks({ headers: { [h]: "x" } }),
      new RegExp(`^apps file: apps\\[0\\]: webhooks\\[0\\]\\.headers: "${h}" cannot be set`),
    );
  }
  refused(
    hooks({ headers: { "Bad Name": "x" } }),
    'apps file: apps[0]: webhooks[0].headers: "Bad Name" is not a header name',
  );
  refused(
    hooks({ headers: { "X-A": "line\r\nX-B: injected" } }),
    'apps file: apps[0]: webhooks[0].headers["X-A"] must be a string of header text (no line breaks)',
  );
  refused(hooks({ headers: ["X-A"] }), /webhooks\[0\]\.headers must be an object/);
  refused(hooks({ filter: "presence-" }), /webhooks\[0\]\.filter must be an object/);
  refused(hooks({ filter: { channel_name_starts_with: "" } }), /must be a non-empty string/);
  refused(
    hooks({ filter: { channel_name_contains: "x" } }),
    'apps file: apps[0]: webhooks[0].filter has unknown setting "channel_name_contains"',
  );
});

Deno.test("a Soketi app entry starts unchanged: camelCase keys read as ours, KiB as bytes, -1 as no limit", () => {
  // Soketi's app fields as its array app manager documents them.
  const soketi = {
    id: "app-id",
    key: "app-key",
    secret: "app-secret",
    maxConnections: -1,
    enableClientMessages: true,
    enabled: true,
    maxBackendEventsPerSecond: -1,
    maxClientEventsPerSecond: 50,
    maxReadRequestsPerSecond: -1,
    enableUserAuthentication: true,
    maxPresenceMembersPerChannel: 25,
    maxPresenceMemberSizeInKb: 1.5,
    maxChannelNameLength: 200,
    maxEventChannelsAtOnce: 50,
    maxEventNameLength: 150,
    maxEventPayloadInKb: 100,
    maxEventBatchSize: 5,
    webhooks: [{
      url: "https://hooks.example/pusher",
      event_types: ["member_added"],
      filter: { channel_name_starts_with: "presence-" },
      headers: { "X-Custom": "1" },
    }],
  };
  const [a] = parseApps({ apps: [soketi] });
  assert.equal(a.max_connections, 0);
  assert.equal(a.enable_client_messages, true);
  assert.equal(a.enabled, true);
  assert.equal(a.max_backend_events_per_sec, 0);
  assert.equal(a.max_client_events_per_sec, 50);
  assert.equal(a.enable_user_authentication, 1);
  assert.deepEqual(a.limits, {
    max_presence_members_per_channel: 25,
    max_presence_member_bytes: 1536,
    max_channel_name_length: 200,
    max_event_name_length: 150,
    max_event_payload_bytes: 102400,
    max_event_channels: 50,
    max_event_batch_size: 5,
  });
  assert.equal(a.webhooks![0].filter!.channel_name_starts_with, "presence-");
  // A setting given both ways is refused; a read rate limit Switchboard lacks is named.
  refused(
    { max_connections: 5, maxConnections: 5 },
    'apps file: apps[0] gives "max_connections" twice (as "maxConnections")',
  );
  refused(
    { maxReadRequestsPerSecond: 100 },
    /^apps file: apps\[0\] has unknown setting "maxReadRequestsPerSecond" \(a setting of other Pusher servers that Switchboard does not support: Soketi's read-request rate limit/,
  );
  refused({ enableUserAuthentication: "yes" }, /enable_user_authentication must be 0 or 1/);
});
