// A console secret equal to an app's secret would let that app's owner log in as admin: the
// server refuses to start, with one line naming the app (never the secret), exit code 2.
import assert from "node:assert/strict";
import { startRefused } from "../helpers/server.ts";
import { CONSOLE_APPS } from "./helpers.ts";

Deno.test("console secret: equal to an app's secret is refused at start-up", async () => {
  const out = await startRefused(CONSOLE_APPS, ["--console-secret", CONSOLE_APPS[1].secret]);
  const stderr = out.stderr.trim();
  assert.equal(out.code, 2);
  assert.equal(
    stderr,
    `switchboard: --console-secret must differ from every app's secret: app "app-2" has the same one (its owner would open every app's console)`,
  );
  assert.ok(!stderr.includes(CONSOLE_APPS[1].secret), "the secret is not printed");
});
