// The console's Limits view of an app: each per-app limit in force, whether the apps file sets
// it, and the refusals over it (the same counts /metrics shows), for that app's session only.
import assert from "node:assert/strict";
import { call, CONSOLE_APPS, login, startConsole } from "./helpers.ts";
import { serverLib } from "../pusher/helpers.ts";

Deno.test("console: an app's limits with their refusals", async () => {
  const apps = [{ ...CONSOLE_APPS[0], max_event_batch_size: 2 }, CONSOLE_APPS[1]];
  const server = await startConsole({ apps });
  try {
    const lib = serverLib(server, apps[0]);
    const batch = [1, 2, 3].map((i) => ({ channel: "c", name: "ev", data: String(i) }));
    await assert.rejects(lib.triggerBatch(batch), (e: { status: number }) => e.status === 400);
    const cookie = await login(server, apps[0].secret);
    const res = await call(server, "/console/api/apps/app-1/limits", { cookie });
    assert.equal(res.status, 200);
    const rows = res.body.limits as {
      name: string;
      value: number;
      set: boolean;
      refused: number;
    }[];
    assert.deepEqual(rows.find((r) => r.name === "max_event_batch_size"), {
      name: "max_event_batch_size",
      value: 2,
      set: true,
      refused: 1,
    });
    assert.deepEqual(rows.find((r) => r.name === "max_presence_members_per_channel"), {
      name: "max_presence_members_per_channel",
      value: 100,
      set: false,
      refused: 0,
    });
    assert.equal(rows.length, 7);
    // Another app's session does not see this app.
    const other = await login(server, apps[1].secret);
    assert.equal(
      (await call(server, "/console/api/apps/app-1/limits", { cookie: other })).status,
      404,
    );
  } finally {
    await server.stop();
  }
});
