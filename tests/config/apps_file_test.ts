// parseApps(): app ids and keys are storage-key parts, bounded at 256 UTF-8 bytes; a rate
// limit of 0 means unlimited.
import assert from "node:assert/strict";
import { parseApps } from "../../lib/config/apps_file.ts";
import { ConfigError } from "../../lib/config/config.ts";

const app = (over: Record<string, unknown>) => ({
  apps: [{ id: "a", key: "k", secret: "s", ...over }],
});

Deno.test("parseApps() refuses an app id or key over 256 UTF-8 bytes, naming it", () => {
  // 65 four-byte emoji: 260 bytes in 130 UTF-16 units.
  const long = "🔑".repeat(65);
  assert.throws(
    () => parseApps(app({ id: long })),
    (e) =>
      e instanceof ConfigError && e.message === "apps file: apps[0]: id is longer than 256 bytes",
  );
  assert.throws(
    () => parseApps(app({ key: long })),
    (e) =>
      e instanceof ConfigError && e.message === "apps file: apps[0]: key is longer than 256 bytes",
  );
  assert.equal(parseApps(app({ id: "🔑".repeat(64) }))[0].id, "🔑".repeat(64));
});

Deno.test("parseApps() accepts 0 for the rate limits (unlimited)", () => {
  const [a] = parseApps(app({ max_client_events_per_sec: 0, max_backend_events_per_sec: 0 }));
  assert.equal(a.max_client_events_per_sec, 0);
  assert.equal(a.max_backend_events_per_sec, 0);
});

Deno.test("parseApps() reads Pusher-style webhooks and refuses bad URLs and event types", () => {
  const hooks = [{
    url: "http://127.0.0.1:9/hook",
    event_types: ["channel_occupied", "client_event"],
  }];
  assert.deepEqual(parseApps(app({ webhooks: hooks }))[0].webhooks, hooks);
  assert.throws(
    () => parseApps(app({ webhooks: [{ url: "ftp://x", event_types: ["channel_occupied"] }] })),
    (e) =>
      e instanceof ConfigError &&
      e.message === "apps file: apps[0]: webhooks[0].url must be an http:// or https:// URL",
  );
  assert.throws(
    () => parseApps(app({ webhooks: [{ url: "http://x", event_types: ["channel_existence"] }] })),
    (e) =>
      e instanceof ConfigError &&
      /webhooks\[0\]\.event_types must be a non-empty array of channel_occupied/.test(e.message),
  );
});

Deno.test("parseApps() names an unknown key, anywhere in the file, as a start-up error", () => {
  assert.throws(
    () => parseApps({ apps: [{ id: "a", key: "k", secret: "s" }], extra: 1 }),
    (e) => e instanceof ConfigError && e.message === 'apps file has unknown setting "extra"',
  );
  assert.throws(
    () => parseApps(app({ colour: "red" })),
    (e) =>
      e instanceof ConfigError && e.message === 'apps file: apps[0] has unknown setting "colour"',
  );
  // Keys other Pusher servers accept: refused with a hint, never silently ignored.
  for (const k of ["filter", "headers"]) {
    const hooks = [{ url: "http://127.0.0.1:9/hook", event_types: ["client_event"], [k]: {} }];
    assert.throws(() => parseApps(app({ webhooks: hooks })), (e) =>
      e instanceof ConfigError &&
      e.message.startsWith(
        `apps file: apps[0]: webhooks[0] has unknown setting "${k}" (a setting of other Pusher servers`,
      ));
  }
});

Deno.test("parseApps() reads enabled, user_authentication_timeout, webhook_batching and cache_miss hooks", () => {
  const [a] = parseApps(app({
    enabled: false,
    user_authentication_timeout: 30,
    webhook_batching: true,
    webhooks: [{ url: "http://127.0.0.1:9/h", event_types: ["cache_miss"] }],
  }));
  assert.equal(a.enabled, false);
  assert.equal(a.user_authentication_timeout, 30);
  assert.equal(a.webhook_batching, true);
  assert.deepEqual(a.webhooks?.[0].event_types, ["cache_miss"]);
  const [b] = parseApps(app({}));
  assert.equal(b.enabled, undefined);
  assert.equal(b.user_authentication_timeout, undefined);
  assert.throws(
    () => parseApps(app({ enabled: "no" })),
    (e) =>
      e instanceof ConfigError && e.message === "apps file: apps[0]: enabled must be true or false",
  );
  for (const bad of [0, -1, 1.5, "30", 86_401]) {
    assert.throws(
      () => parseApps(app({ user_authentication_timeout: bad })),
      (e) =>
        e instanceof ConfigError &&
        /user_authentication_timeout must be a whole number of seconds/.test(e.message),
    );
  }
  assert.throws(
    () => parseApps(app({ webhook_batching: 1 })),
    (e) =>
      e instanceof ConfigError &&
      e.message === "apps file: apps[0]: webhook_batching must be true or false",
  );
});
