// parseApps(): app ids and keys are storage-key parts, bounded at 256 UTF-8 bytes; a rate
// limit of 0 means unlimited.
import assert from "node:assert/strict";
import { parseApps } from "../../lib/config/apps_file.ts";
import { ConfigError } from "../../lib/config/config.ts";

const app = (over: Record<string, unknown>) => ({ apps: [{ id: "a", key: "k", secret: "s", ...over }] });

Deno.test("parseApps() refuses an app id or key over 256 UTF-8 bytes, naming it", () => {
  // 65 four-byte emoji: 260 bytes in 130 UTF-16 units.
  const long = "🔑".repeat(65);
  assert.throws(() => parseApps(app({ id: long })), (e) =>
    e instanceof ConfigError && e.message === "apps file: apps[0]: id is longer than 256 bytes");
  assert.throws(() => parseApps(app({ key: long })), (e) =>
    e instanceof ConfigError && e.message === "apps file: apps[0]: key is longer than 256 bytes");
  assert.equal(parseApps(app({ id: "🔑".repeat(64) }))[0].id, "🔑".repeat(64));
});

Deno.test("parseApps() accepts 0 for the rate limits (unlimited)", () => {
  const [a] = parseApps(app({ max_client_events_per_sec: 0, max_backend_events_per_sec: 0 }));
  assert.equal(a.max_client_events_per_sec, 0);
  assert.equal(a.max_backend_events_per_sec, 0);
});

Deno.test("parseApps() reads Pusher-style webhooks and refuses bad URLs and event types", () => {
  const hooks = [{ url: "http://127.0.0.1:9/hook", event_types: ["channel_occupied", "client_event"] }];
  assert.deepEqual(parseApps(app({ webhooks: hooks }))[0].webhooks, hooks);
  assert.throws(() => parseApps(app({ webhooks: [{ url: "ftp://x", event_types: ["channel_occupied"] }] })), (e) =>
    e instanceof ConfigError && e.message === "apps file: apps[0]: webhooks[0].url must be an http:// or https:// URL");
  assert.throws(() => parseApps(app({ webhooks: [{ url: "http://x", event_types: ["channel_existence"] }] })), (e) =>
    e instanceof ConfigError && /webhooks\[0\]\.event_types must be a non-empty array of channel_occupied/.test(e.message));
});
