// A console secret equal to an app's secret would let that app's owner log in as admin: the
// server refuses to start, with one line naming the app (never the secret), exit code 2.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { serverCommand } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { CONSOLE_APPS } from "./helpers.ts";

Deno.test("console secret: equal to an app's secret is refused at start-up", async () => {
  const dir = tempDir("sb-clash-");
  const apps = join(dir, "apps.json");
  writeFileSync(apps, JSON.stringify({ apps: CONSOLE_APPS }));
  const { cmd, args } = serverCommand();
  const out = await new Deno.Command(cmd, {
    args: [
      ...args,
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--data-dir",
      join(dir, "data"),
      "--apps",
      apps,
      "--console-secret",
      CONSOLE_APPS[1].secret,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr).trim();
  assert.equal(out.code, 2);
  assert.equal(
    stderr,
    `switchboard: --console-secret must differ from every app's secret: app "app-2" has the same one (its owner would open every app's console)`,
  );
  assert.ok(!stderr.includes(CONSOLE_APPS[1].secret), "the secret is not printed");
});
