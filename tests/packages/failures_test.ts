// The failures a new user meets, on the installed tarballs (issue: every one was silent): no
// `transport` on Node 20 and 22 (the client loads `ws` itself, or says what is missing), a
// wrong app key (the reason reaches both clients, which stop), a publish over the frame limit
// (refused at once, with the limit), `require()` of the server package, the declarations (no
// `any`; typed channels, members, objects and chat content in a strict TypeScript app).
import assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { BUN, consumer, DENO, freePort, nodeBinary, root, run, runOk, start } from "./helpers.ts";

const FIXTURES = join(root, "tests/packages/fixtures/failures");

Deno.test({
  name: "packages: no transport, a wrong key and a 2 MB publish under Node 20, Node 22, Deno, Bun",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { dir } = await consumer();
  copyFileSync(join(FIXTURES, "failures.mjs"), join(dir, "failures.mjs"));
  const server = await startServer({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  try {
    const runtimes: [string, string, string[]][] = [
      ["node20", await nodeBinary(dir, 20), ["failures.mjs"]],
      ["node22", await nodeBinary(dir, 22), ["failures.mjs"]],
      ["deno", DENO, ["run", "-A", "failures.mjs"]],
      ["bun", BUN, ["failures.mjs"]],
    ];
    for (const [name, cmd, args] of runtimes) {
      const r = await run(cmd, args, {
        cwd: dir,
        env: {
          ...Deno.env.toObject(),
          SB_BASE_URL: server.baseUrl,
          SB_APP_KEY: "key1",
          SB_TAG: name,
        },
      });
      assert.equal(r.code, 0, `${name} failed:\n${r.out}`);
      const seen = JSON.parse(r.out.trim().split("\n").at(-1)!);
      assert.equal(seen.joined, true, `${name}: joined with no transport option`);
      assert.equal(seen.chat, `thread-${name}`, `${name}: ChatClient with no transport option`);
      assert.match(seen.tooBig.message, /frame too large: limit is 1048576 bytes/, name);
      assert.match(seen.tooBig.reason, /^frame too large: limit is 1048576 bytes/, name);
      assert.equal(seen.tooBig.atOnce, true, `${name}: refused before sending`);
      assert.deepEqual(
        { ...seen.refused, message: undefined },
        {
          reason: "unknown app key",
          status: 401,
          fatal: true,
          isConnectionError: true,
          message: undefined,
          events: ["unknown app key"],
        },
        name,
      );
      assert.match(seen.refused.message, /unknown app key .*HTTP 401/, name);
      assert.equal(seen.chatRefused, "unknown app key", `${name}: ChatClient refusal`);
    }
  } finally {
    await server.stop();
  }
});

Deno.test({
  name: "packages: on Node 20 without the ws package the client names WebSocket and the fix",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { dir } = await consumer();
  // A folder of its own with the client and its dependencies but no `ws` anywhere above it.
  const bare = tempDir("sb-no-ws-");
  for (const pkg of ["@switchboard/client", "phoenix", "msgpackr"]) {
    cpSync(join(dir, "node_modules", pkg), join(bare, "node_modules", pkg), { recursive: true });
  }
  assert.ok(!existsSync(join(bare, "node_modules/ws")));
  copyFileSync(join(FIXTURES, "no-ws.mjs"), join(bare, "no-ws.mjs"));
  const r = await run(await nodeBinary(dir, 20), ["no-ws.mjs"], {
    cwd: bare,
    env: { ...Deno.env.toObject(), SB_ENDPOINT: "ws://127.0.0.1:9/socket" },
  });
  assert.equal(r.code, 0, r.out);
  const seen = JSON.parse(r.out.trim().split("\n").at(-1)!);
  assert.equal(seen.fatal, true);
  assert.match(seen.message, /No WebSocket in this runtime \(Node v20\.[0-9.]+ has none/);
  assert.match(seen.message, /npm install ws/);
  assert.match(seen.message, /transport option/);
});

Deno.test({
  name: "packages: a client started before its server keeps trying and joins (Node 20 and 22)",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { dir } = await consumer();
  copyFileSync(join(FIXTURES, "late-server.mjs"), join(dir, "late-server.mjs"));
  for (const node of [await nodeBinary(dir, 20), await nodeBinary(dir, 22)]) {
    const port = freePort();
    const client = start(node, ["late-server.mjs"], {
      cwd: dir,
      env: { SB_ENDPOINT: `ws://127.0.0.1:${port}/socket` },
    });
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      await client.waitFor(/waiting/);
      server = await startServer({
        apps: [{ id: "app-1", key: "key1", secret: "secret1" }],
        args: ["--port", String(port)],
      });
      assert.equal(server.port, port);
      const line = await client.waitFor(/^\{.*\}$/m);
      assert.deepEqual(JSON.parse(line[0]), {
        joined: true,
        errors: [{ reason: "server unreachable", fatal: false }],
      }, node);
    } finally {
      await client.stop();
      await server?.stop();
    }
  }
});

Deno.test("packages: require('@switchboard/server') works on Node 20 and 22", async () => {
  const { dir } = await consumer();
  copyFileSync(join(FIXTURES, "require.cjs"), join(dir, "require.cjs"));
  for (const node of [await nodeBinary(dir, 20), await nodeBinary(dir, 22)]) {
    const out = await runOk(node, ["require.cjs"], { cwd: dir });
    assert.deepEqual(JSON.parse(out.trim().split("\n").at(-1)!), {
      Switchboard: "function",
      verifyChannelWebhook: "function",
      instance: true,
    }, node);
  }
});

Deno.test("packages: no `any` in the declarations; a strict app types channels, members, objects and chat", async () => {
  const { dir } = await consumer();
  for (const name of ["client", "server", "react", "ai"]) {
    const pkgDir = join(dir, "node_modules/@switchboard", name, "dist");
    const files = readdirSync(pkgDir, { recursive: true }).map(String).filter((f) =>
      f.endsWith(".d.ts")
    );
    assert.ok(files.length > 0, name);
    for (const f of files) {
      const code = readFileSync(join(pkgDir, f), "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/\/\/.*$/gm, "");
      assert.doesNotMatch(code, /\bany\b/, `@switchboard/${name}/dist/${f} declares an any`);
    }
  }
  // The app's folder inside the consumer folder: its packages resolve from there.
  const app = join(dir, "typed-app");
  for (const f of ["typed.tsx", "tsconfig.json"]) {
    cpSync(join(FIXTURES, f), join(app, f));
  }
  const tsc = await run(join(dir, "node_modules/.bin/tsc"), ["--noEmit", "-p", "."], { cwd: app });
  assert.equal(tsc.code, 0, tsc.out);
});
