// Static checks of every command in README.md and docs/*.md (fast; the runner .ci/docs_check
// runs the marked blocks): nothing starts with a bare `deno` or `bun` (not on PATH after the
// README's set-up: `npx deno ...`) or with `open` (macOS only); every run marker precedes a
// shell block; the first-hour blocks are marked to run, so the check cannot become empty.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { blocksOf, commandsOf, docFiles, isShell, RUN_MARK, serverOf } from "./docs_blocks.ts";

const root = new URL("../../", import.meta.url).pathname;
const BARE = /^(deno|bun|open|xdg-open)\s/;

Deno.test("docs: no command starts with a bare deno, bun or open", () => {
  const bad: string[] = [];
  for (const file of docFiles(root)) {
    for (const b of blocksOf(root, file).filter(isShell)) {
      for (const c of commandsOf(b.body)) if (BARE.test(c)) bad.push(`${file}:${b.line}: ${c}`);
    }
    // Code spans in the prose (fenced blocks removed first).
    const prose = readFileSync(join(root, file), "utf8").replace(/^```[\s\S]*?^```/gm, "");
    for (const m of prose.matchAll(/`([^`\n]+)`/g)) {
      if (BARE.test(m[1])) bad.push(`${file}: \`${m[1]}\``);
    }
  }
  assert.deepEqual(
    bad,
    [],
    "write npx deno / npx bun (deno and bun come from node_modules), and no `open`",
  );
});

Deno.test("docs: every run marker precedes a shell block", () => {
  for (const file of docFiles(root)) {
    const marks = readFileSync(join(root, file), "utf8").split("\n").filter((l) =>
      l.trim() === RUN_MARK
    ).length;
    const marked = blocksOf(root, file).filter((b) => b.run);
    assert.equal(marked.length, marks, `${file}: a ${RUN_MARK} not above a fence`);
    for (const b of marked) {
      assert.ok(isShell(b), `${file}:${b.line}: a run marker on a ${b.lang || "plain"} block`);
    }
  }
});

Deno.test("docs: the first-hour blocks are marked to run", () => {
  const run = docFiles(root).flatMap((f) =>
    blocksOf(root, f).filter((b) => b.run).map((b) => ({ file: f, commands: commandsOf(b.body) }))
  );
  const has = (file: string, commands: string[]) =>
    run.some((b) => b.file === file && commands.every((c, i) => b.commands[i]?.startsWith(c)));
  assert.ok(has("README.md", ["npm ci", "npx deno task start"]), "README Quick start");
  assert.ok(
    has("docs/ai-sdk.md", ["npx deno task start", "npx deno run -A examples/ai-chat/serve.ts"]),
    "the AI SDK example",
  );
  assert.ok(
    has("docs/operations.md", ["npm ci", "npx deno task compile", "./dist/switchboard --help"]),
    "the binary",
  );
  assert.ok(
    has("docs/packages.md", ["npx deno task pack", "mkdir -p my-app", "npm install --prefix"]),
    "the packages' install lines",
  );
  // Servers among them are known to the runner (it waits for them and stops them).
  const servers = run.flatMap((b) => b.commands.filter((c) => /task start|serve\.ts/.test(c)));
  assert.ok(servers.length >= 3);
  for (const c of servers) assert.ok(serverOf(c), `the runner does not know how to wait for: ${c}`);
});

Deno.test("docs: every npm install of the AI SDK pins ai@^7 and @ai-sdk/react@^4", () => {
  const files = [
    ...docFiles(root),
    ...["client", "server", "react", "ai"].map((p) => `packages/${p}/README.md`),
  ];
  const bad: string[] = [];
  let seen = 0;
  for (const file of files) {
    for (const b of blocksOf(root, file).filter(isShell)) {
      for (const c of commandsOf(b.body).filter((c) => /^npm install\b/.test(c))) {
        const words = c.split(/\s+/);
        for (const [name, pinned] of [["ai", "ai@^7"], ["@ai-sdk/react", "@ai-sdk/react@^4"]]) {
          const found = words.filter((w) => w === name || w.startsWith(`${name}@`));
          seen += found.length;
          if (found.some((w) => w !== pinned)) bad.push(`${file}:${b.line}: ${c}`);
        }
      }
    }
  }
  assert.ok(seen >= 4, "the docs show the AI SDK install line");
  assert.deepEqual(bad, [], "a bare `ai` can resolve to another major than the peer's");
});
