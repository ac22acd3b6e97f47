// @switchboard/client and @switchboard/server installed from their tarballs, used by a plain
// .mjs script (no loader, no TypeScript) under Node 20, Deno and Bun: trigger + subscribe on a
// private channel with a token minted by the server SDK, an object write followed live, a chat
// message sent and read back over chat REST, token issuing and the webhook check.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer } from "../helpers/server.ts";
import { BUN, consumer, DENO, nodeBinary, root, run, runOk } from "./helpers.ts";

Deno.test({
  name: "packages: client + server from tarballs in a .mjs under Node 20, Deno and Bun",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { dir } = await consumer();
  copyFileSync(join(root, "tests/packages/fixtures/consumer.mjs"), join(dir, "consumer.mjs"));
  const server = await startServer({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  try {
    const node = await nodeBinary(dir, 20);
    const nodeVersion = (await runOk(node, ["--version"], { cwd: dir })).trim();
    assert.match(nodeVersion, /^v20\./);
    const runtimes: [string, string, string[]][] = [
      [`node ${nodeVersion}`, node, ["consumer.mjs"]],
      ["deno", DENO, ["run", "-A", "consumer.mjs"]],
      ["bun", BUN, ["consumer.mjs"]],
    ];
    for (const [name, cmd, args] of runtimes) {
      const tag = name.split(" ")[0];
      const r = await run(cmd, args, {
        cwd: dir,
        env: {
          ...Deno.env.toObject(),
          SB_BASE_URL: server.baseUrl,
          SB_APP_KEY: "key1",
          SB_APP_SECRET: "secret1",
          SB_TAG: tag,
        },
      });
      assert.equal(r.code, 0, `${name} failed:\n${r.out}`);
      const seen = JSON.parse(r.out.trim().split("\n").at(-1)!);
      assert.deepEqual(
        seen.event,
        { data: { title: `hello ${tag}` }, serial: 1 },
        `${name}: event`,
      );
      assert.equal(seen.triggerSerial, 1, name);
      assert.deepEqual(
        seen.object,
        { state: { n: 3 }, logId: 2, incremented: 3 },
        `${name}: object`,
      );
      assert.ok(seen.chat.includes(`hi from ${tag}`), `${name}: chat ${JSON.stringify(seen.chat)}`);
      assert.equal(seen.token, 3, `${name}: a fast-path token has three parts`);
      assert.equal(seen.webhookForged, false, `${name}: a forged webhook signature is refused`);
    }
  } finally {
    await server.stop();
  }
});

Deno.test("packages: the tarballs hold built JavaScript and .d.ts only, with the server's version", async () => {
  const { dir } = await consumer();
  const version =
    readFileSync(join(root, "lib/version.ts"), "utf8").match(/VERSION = "([^"]+)"/)![1];
  for (const name of ["client", "server", "react", "ai"]) {
    const pkgDir = join(dir, "node_modules/@switchboard", name);
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    assert.equal(pkg.version, version, name);
    assert.equal(pkg.type, "module");
    assert.equal(pkg.sideEffects, false);
    // The server package can also be require()d (Node 20.19+ / 22.12+ load it as ESM).
    assert.deepEqual(
      Object.keys(pkg.exports["."]),
      name === "server" ? ["types", "import", "require"] : ["types", "import"],
    );
    assert.ok(existsSync(join(pkgDir, "README.md")), `${name} ships its README`);
    const files = (await runOk("find", [
      ".",
      "-type",
      "f",
      "-not",
      "-name",
      "package.json",
      "-not",
      "-name",
      "README.md",
    ], { cwd: pkgDir }))
      .trim().split("\n").sort();
    for (const f of files) {
      assert.match(f, /\.(js|d\.ts)$/, `${name}: ${f}`);
      const text = readFileSync(join(pkgDir, f), "utf8");
      assert.doesNotMatch(text, /from\s*["'][^"']+\.ts["']/, `${name}/${f} imports a .ts path`);
      assert.doesNotMatch(
        text,
        /["'](\.\.\/)+(lib|sdk)\//,
        `${name}/${f} reaches into the repository`,
      );
    }
  }
  // react and ai use the client package, not a copy of it; React itself is never bundled.
  for (const name of ["react", "ai"]) {
    const js = readFileSync(join(dir, "node_modules/@switchboard", name, "dist/index.js"), "utf8");
    assert.match(js, /from "@switchboard\/client"/, name);
    assert.doesNotMatch(
      js,
      /class RealtimeClient|class ChatClient/,
      `${name} bundles no client copy`,
    );
  }
  const react = readFileSync(join(dir, "node_modules/@switchboard/react/dist/index.js"), "utf8");
  assert.match(react, /from "react"/);
  assert.doesNotMatch(
    react,
    /__CLIENT_INTERNALS|react\.transitional\.element/,
    "React is not bundled",
  );
});
