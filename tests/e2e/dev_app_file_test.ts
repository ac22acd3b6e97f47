// Without an apps file the server keeps `<data-dir>/development-app.json` (mode 0600): the
// development app it printed and where it listens, rewritten at each start, so local tools
// (examples/ai-chat) need no pasted secret. With an apps file there is no such file.
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { startServer } from "../helpers/server.ts";

Deno.test("development-app.json: the printed development app and the server's address", async () => {
  const server = await startServer({ apps: null });
  try {
    const file = join(server.dataDir, "development-app.json");
    const out = server.output();
    const printed = (label: string) => out.match(new RegExp(`app ${label}:\\s+(\\S+)`))![1];
    const dev = JSON.parse(readFileSync(file, "utf8"));
    assert.deepEqual(dev, {
      app_id: printed("id"),
      app_key: printed("key"),
      app_secret: printed("secret"),
      url: `http://127.0.0.1:${server.port}`,
      socket: `ws://127.0.0.1:${server.port}/socket`,
    });
    assert.equal(statSync(file).mode & 0o777, 0o600, "readable by its owner only");
    // The credentials work against the server that wrote them.
    const res = await fetch(`${dev.url}/api/apps/${dev.app_id}/channels`, {
      headers: { "x-app-key": dev.app_key, "x-app-secret": dev.app_secret },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await server.stop();
  }
  // A restart on the same data dir rewrites it with the new port and the same app.
  const again = await startServer({ apps: null, dataDir: server.dataDir });
  try {
    const dev = JSON.parse(readFileSync(join(server.dataDir, "development-app.json"), "utf8"));
    assert.equal(dev.url, `http://127.0.0.1:${again.port}`);
    assert.match(again.output(), new RegExp(`app secret: ${dev.app_secret}`));
  } finally {
    await again.stop();
  }
});

Deno.test("development-app.json: not written with an apps file", async () => {
  const server = await startServer();
  try {
    assert.ok(!existsSync(join(server.dataDir, "development-app.json")));
  } finally {
    await server.stop();
  }
});
