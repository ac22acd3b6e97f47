// parseApps(): app ids and keys follow one grammar (1 to 64 characters from A-Z a-z 0-9 _ -),
// are unique, and no id equals another app's key; a rate limit of 0 means unlimited.
import assert from "node:assert/strict";
import { newDevelopmentApp, parseApps } from "../../lib/config/apps_file.ts";
import { APP_ID_RE } from "../../lib/config/app_ids.ts";
import { ConfigError } from "../../lib/config/config.ts";

const app = (over: Record<string, unknown>) => ({
  apps: [{ id: "a", key: "k", secret: "s", ...over }],
});

/** Asserts `doc` is refused with exactly `message`. */
function refused(doc: unknown, message: string): void {
  assert.throws(
    () => parseApps(doc),
    (e) => e instanceof ConfigError && e.message === message,
    message,
  );
}

const RULE = "1 to 64 characters from A-Z a-z 0-9 _ -";

Deno.test("parseApps() refuses an app id or key outside the grammar, naming the app and the rule", () => {
  for (
    const bad of [
      "acme/eu",
      "a:b",
      "x%2F",
      "n\nl",
      "sp ace",
      "trail/",
      "a\u0000b",
      "/",
      "my.key",
      "café",
      "🔑",
      "",
      "a".repeat(65),
    ]
  ) {
    if (bad !== "") {
      refused(
        app({ id: bad }),
        `apps file: apps[0] (id ${JSON.stringify(bad)}): id ${JSON.stringify(bad)} is not ${RULE}`,
      );
    }
    refused(
      { apps: [{ id: "ok", key: "k1", secret: "s" }, { id: "b", key: bad || "x y", secret: "s" }] },
      `apps file: apps[1] (id "b"): key ${JSON.stringify(bad || "x y")} is not ${RULE}`,
    );
  }
  // The edges of the grammar are accepted.
  const edge = "Az09_-".padEnd(64, "x");
  assert.equal(parseApps(app({ id: edge, key: "K" }))[0].id, edge);
  assert.equal(parseApps(app({ id: "-", key: "_" }))[0].key, "_");
});

Deno.test("parseApps() refuses a repeated id or key, and an id equal to another app's key", () => {
  refused(
    { apps: [{ id: "a", key: "k1", secret: "s" }, { id: "a", key: "k2", secret: "s" }] },
    `apps file: apps[1] (id "a"): id "a" is also the id of apps[0] (id "a"); ids must be unique`,
  );
  refused(
    { apps: [{ id: "a", key: "k", secret: "s" }, { id: "b", key: "k", secret: "s" }] },
    `apps file: apps[1] (id "b"): key "k" is also the key of apps[0] (id "a"); keys must be unique`,
  );
  // Either order: the id comes before or after the key it equals.
  refused(
    { apps: [{ id: "a", key: "k", secret: "s" }, { id: "k", key: "k2", secret: "s" }] },
    `apps file: apps[1] (id "k"): id "k" is the key of apps[0] (id "a"); an app's id must not equal another app's key`,
  );
  refused(
    { apps: [{ id: "k", key: "k2", secret: "s" }, { id: "a", key: "k", secret: "s" }] },
    `apps file: apps[0] (id "k"): id "k" is the key of apps[1] (id "a"); an app's id must not equal another app's key`,
  );
  // An app's own id may equal its own key.
  assert.equal(parseApps(app({ id: "same", key: "same" }))[0].key, "same");
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
  // Keys other Pusher servers accept that have no equivalent: refused with a hint, never
  // silently ignored.
  for (const k of ["lambda_function", "lambda"]) {
    const hooks = [{ url: "http://127.0.0.1:9/hook", event_types: ["client_event"], [k]: {} }];
    assert.throws(() => parseApps(app({ webhooks: hooks })), (e) =>
      e instanceof ConfigError &&
      e.message.startsWith(
        `apps file: apps[0]: webhooks[0] has unknown setting "${k}" (a setting of other Pusher servers that Switchboard does not support: Soketi's AWS Lambda webhooks`,
      ));
  }
  for (const k of ["ping_interval", "max_message_size", "app_id"]) {
    assert.throws(
      () => parseApps(app({ [k]: 1 })),
      (e) =>
        e instanceof ConfigError &&
        e.message.startsWith(`apps file: apps[0] has unknown setting "${k}" (a setting of other`) &&
        e.message.endsWith("; remove it)"),
    );
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

Deno.test("the development app made at first start follows the id and key grammar", () => {
  for (let i = 0; i < 20; i++) {
    const dev = newDevelopmentApp();
    assert.match(dev.id, APP_ID_RE);
    assert.match(dev.key, APP_ID_RE);
    assert.notEqual(dev.id, dev.key);
  }
});
