// A webhook delivery given up after its last attempt is counted per app and URL: on the
// console's webhook page and in /metrics. The waits are shortened through
// SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS (three attempts) so the test does not wait an hour.
import assert from "node:assert/strict";
import { ADMIN_SECRET, call, CONSOLE_APPS, login, until } from "./helpers.ts";
import { startServer } from "../helpers/server.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { client, type Pusher, subscribed } from "../pusher/helpers.ts";

Deno.test({
  name: "console webhooks: a delivery given up after its last attempt is counted per app and URL",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const hook = receiver(Array(100).fill(500)); // always 500
    const apps = CONSOLE_APPS.map((a, i) =>
      i === 0 ? { ...a, webhooks: [{ url: hook.url, event_types: ["channel_occupied"] }] } : a
    );
    // A process of its own: the retry delays are read from the process environment.
    const server = await startServer({
      apps,
      args: ["--console-secret", ADMIN_SECRET],
      env: { SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS: "50,50" },
    });
    let p: Pusher | undefined;
    try {
      p = client(server);
      await subscribed(p, "given-up-room");
      await hook.waitFor(3, 30_000);
      const cookie = await login(server, CONSOLE_APPS[0].secret);
      const row = await until(
        async () => {
          const res = await call(server, "/console/api/apps/app-1/webhooks", { cookie });
          return (res.body.webhooks as Record<string, unknown>[]).find((w) => w.url === hook.url);
        },
        // Counted when given up; its row leaves the outbox in the commit right after.
        (w) => w?.given_up === 1 && w?.pending === 0,
        "the given-up count on the webhook page, nothing pending",
        30_000,
      );
      assert.equal(row?.given_up, 1);
      assert.equal(hook.got.length, 3, "three attempts, then given up");
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      assert.ok(
        metrics.includes(
          `switchboard_webhook_given_up_total{kind="pusher",app="app-1",url="${hook.url}"} 1`,
        ),
        "the given-up delivery is on /metrics with its app and URL",
      );
      assert.match(server.output(), /webhook delivery given up .*app=app-1/);
    } finally {
      p?.disconnect();
      await server.stop();
      await hook.close();
    }
  },
});
