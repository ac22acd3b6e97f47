// Drives the console page in headless Chromium (playwright-core, /usr/bin/chromium; install it
// with .ci/browser_deps): log in, see a trigger made by the test and a refused join with its
// reason in the live stream (filter, pause), an object's log and an earlier state, a failing
// webhook's last error, and charts with data. With CONSOLE_SCREENSHOTS=<dir> set it also
// saves the screenshots shown in docs/console.md.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { RawSocket } from "../helpers/raw_socket.ts";
import { receiver } from "../helpers/webhook_receiver.ts";
import { serverLib } from "../pusher/helpers.ts";
import { ADMIN_SECRET, CONSOLE_APPS, startConsole, until } from "./helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const SHOTS = Deno.env.get("CONSOLE_SCREENSHOTS");

/** Saves a screenshot when CONSOLE_SCREENSHOTS is set. */
async function shot(page: Page, name: string) {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `console-${name}.png`), fullPage: false });
}

/** The text of every visible live row. */
const liveRows = (page: Page) =>
  page.evaluate(
    `Array.from(document.querySelectorAll("#live tr")).filter((tr) => !tr.hidden).map((tr) => tr.textContent)`,
  ) as Promise<string[]>;

Deno.test({
  name:
    "console page: login, live stream with a trigger and a refused join, object log, failing webhook, charts",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser_deps`);
    const hook = receiver(Array(50).fill(500));
    const apps = [
      { ...CONSOLE_APPS[0], name: "Shop" },
      {
        ...CONSOLE_APPS[1],
        name: "Support",
        webhooks: [{ url: hook.url, event_types: ["channel_occupied"] }],
      },
    ];
    const server = await startConsole({ apps });
    const sockets: RawSocket[] = [];
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
      const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));

      // Login: a wrong secret is refused on the page, the admin secret opens the console.
      await page.goto(server.baseUrl + "/console/");
      await page.waitForSelector("#login:not([hidden])");
      await page.fill("#secret", "wrong-secret");
      await page.click("#login button[type=submit]");
      await until(
        () => page.textContent("#login-error"),
        (t) => /wrong secret/.test(t ?? ""),
        "login error",
      );
      await shot(page, "login");
      await page.fill("#secret", ADMIN_SECRET);
      await page.click("#login button[type=submit]");
      await page.waitForSelector("#views:not([hidden])");
      await until(() => page.textContent("#live-state"), (t) => t === "live", "live stream ready");
      const options = await page.evaluate(
        `Array.from(document.querySelectorAll("#app-select option")).map((o) => o.textContent)`,
      ) as string[];
      assert.equal(options.length, 2);
      assert.ok(
        options.every((o) => !apps.some((a) => o.includes(a.secret))),
        "no secret in full on the page",
      );

      // Live: a socket joins, a private join is refused with its reason, the test triggers.
      const sock = await RawSocket.connect(server.wsUrl("key1"));
      sockets.push(sock);
      await sock.join("pubsub:key1:orders");
      const refused = await sock.join("pubsub:key1:private-admin");
      assert.equal(refused.status, "error");
      await serverLib(server, apps[0]).trigger("orders", "order-placed", { id: 1042, total: 99.5 });
      const rows = await until(
        () => liveRows(page),
        (r) => r.some((t) => t.includes("order-placed")),
        "triggered event row",
      );
      assert.ok(
        rows.some((t) => t.includes(`refused: ${refused.response.reason}`)),
        `refused join row in ${rows}`,
      );
      assert.ok(rows.some((t) => t.includes("order-placed #1") && t.includes('"total":99.5')));
      assert.ok(rows.some((t) => t.includes("opened (phoenix)")));
      await shot(page, "live");

      // Filter by channel, then by kind; pause holds new entries until resumed.
      await page.fill("#f-channel", "private");
      const filtered = await until(
        () => liveRows(page),
        (r) => r.length > 0 && r.every((t) => t.includes("private-admin")),
        "channel filter",
      );
      assert.equal(filtered.length, 1);
      await page.fill("#f-channel", "");
      await page.uncheck("[data-kind=join]");
      assert.ok(
        (await liveRows(page)).every((t) => !t.includes("joined") && !t.includes("refused")),
      );
      await page.check("[data-kind=join]");
      await page.click("#pause");
      await serverLib(server, apps[0]).trigger("orders", "while-paused", {});
      await until(
        () => page.textContent("#live-state"),
        (t) => /[1-9]\d* held/.test(t ?? ""),
        "held entries",
      );
      assert.ok((await liveRows(page)).every((t) => !t.includes("while-paused")));
      await page.click("#pause");
      await until(
        () => liveRows(page),
        (r) => r.some((t) => t.includes("while-paused")),
        "resumed",
      );

      // Objects: the state at the head, the log, a click on an entry shows the state then.
      for (const [slot, value] of [["status", "new"], ["items", 2], ["status", "paid"]] as const) {
        const res = await fetch(`${server.baseUrl}/api/v1/objects/app-1/order/1042/${slot}`, {
          method: "PUT",
          headers: server.headers(apps[0]),
          body: JSON.stringify({ value }),
        });
        assert.equal(res.status, 200);
      }
      await page.click("[data-tab=objects]");
      await page.fill("#ob-type", "order");
      await page.fill("#ob-key", "1042");
      await page.click("#ob-show");
      await until(
        () => page.textContent("#object-state"),
        (t) => /"status": "paid"/.test(t ?? ""),
        "object state",
      );
      assert.equal(await page.locator("#object-log tr").count(), 3);
      await page.click("#object-log tr:first-child");
      const earlier = await until(
        () => page.textContent("#object-state-at").catch(() => ""),
        (t) => /"status": "new"/.test(t ?? ""),
        "state at log_id 1",
      );
      assert.ok(!earlier!.includes("items"));
      await shot(page, "objects");

      // Webhooks: app "Support" has a webhook that answers 500; occupying a channel makes a
      // delivery whose last error shows.
      await page.selectOption("#app-select", "app-2");
      const sock2 = await RawSocket.connect(server.wsUrl("key2"));
      sockets.push(sock2);
      await sock2.join("pubsub:key2:tickets");
      await hook.waitFor(2, 15_000);
      await page.click("[data-tab=webhooks]");
      await until(
        async () => {
          await page.click("#wh-refresh");
          return await page.textContent("#webhooks .webhook-error");
        },
        (t) => /500 \(attempt \d\)/.test(t ?? ""),
        "webhook last error",
      );
      assert.match(
        await page.textContent("#webhooks") ?? "",
        new RegExp(hook.url.replaceAll("/", "\\/")),
      );
      await shot(page, "webhooks");

      // Limits: the app's per-app limits in force, each with its refusals on this node.
      await page.click("[data-tab=limits]");
      await page.waitForSelector("#limits tr");
      assert.match(await page.textContent("#limits") ?? "", /max_presence_members_per_channel/);
      await shot(page, "limits");

      if (SHOTS) {
        // For the docs' screenshots only: a minute and a half of varied traffic, so the charts
        // show several points.
        const lib = serverLib(server, apps[0]);
        const end = Date.now() + 90_000;
        for (let i = 0; Date.now() < end; i++) {
          await lib.trigger("orders", "tick", { i });
          if (i % 5 === 0) await sock.join(`pubsub:key1:private-${i}`);
          await new Promise((r) => setTimeout(r, 100 + (i % 20) * 40));
        }
      }

      // Charts: the app's series have data (one webhook failure at least), the node's too.
      await page.click("[data-tab=charts]");
      await page.waitForSelector(".chart[data-series=webhooks_failed] svg path[d^=M]", {
        state: "attached",
      });
      const failedMax = Number(
        await page.getAttribute(".chart[data-series=webhooks_failed]", "data-max"),
      );
      assert.ok(failedMax >= 1, `webhooks_failed max ${failedMax}`);
      await page.selectOption("#app-select", "app-1");
      await page.click("[data-tab=charts]");
      await until(
        () => page.getAttribute(".chart[data-series=published]", "data-max").catch(() => "0"),
        (v) => Number(v) >= 2,
        "app-1 published chart",
      );
      assert.ok(
        Number(await page.getAttribute(".chart[data-series=connections]", "data-max")) >= 1,
      );
      assert.ok(Number(await page.getAttribute(".chart[data-series=http_p99_ms]", "data-max")) > 0);
      await page.selectOption("#chart-scope", "node");
      await until(
        () => page.getAttribute(".chart[data-series=connections]", "data-max").catch(() => "0"),
        (v) => Number(v) >= 2,
        "node connections chart",
      );
      await shot(page, "charts");

      // Log out: the session ends, the login form is back.
      await page.click("#logout");
      await page.waitForSelector("#login:not([hidden])");
      const after = await page.evaluate(`fetch("/console/api/session").then((r) => r.status)`);
      assert.equal(after, 401);
      assert.deepEqual(errors, [], "no uncaught page errors");
    } finally {
      await browser?.close();
      for (const s of sockets) await s.close();
      await hook.close();
      await server.stop();
    }
  },
});
