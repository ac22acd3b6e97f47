// The repository documents itself: no tracked file (code, tests, docs, CI, benchmarks) names a
// document that a clone does not have, and every `docs/<page>.md` a file cites exists. The rules
// the code follows are in docs/design.md and the other pages under docs/; every relative link in
// the markdown files resolves.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("../../", import.meta.url).pathname;

/** Names of documents outside the repository (spelled in pieces, so this file names none). */
const OUTSIDE = ["CONTRACT", "DESIGN", "SPEC"].map((n) => `${n}.md`).concat(
  ["/work", "/shared"].join(""),
);

/** Folders that are never part of the repository's content. */
const SKIP = new Set([".git", "node_modules", "dist", "data"]);

/** The repository's files: `git ls-files` in a checkout, else every file under the root. */
function repositoryFiles(): string[] {
  try {
    const out = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" });
    const files = out.split("\0").filter((f) => f !== "" && existsSync(join(root, f)));
    if (files.length > 0) return files;
  } catch {
    // not a git checkout (a copy of the tree): walk it instead
  }
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (SKIP.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.push(relative(root, path));
    }
  };
  walk(root);
  return files;
}

/** The text files among them (binary files, such as screenshots, hold a NUL byte). */
function textFiles(): { file: string; text: string }[] {
  return repositoryFiles().flatMap((file) => {
    const bytes = readFileSync(join(root, file));
    if (bytes.includes(0)) return [];
    return [{ file, text: bytes.toString("utf8") }];
  });
}

Deno.test("no tracked file names a document outside the repository", () => {
  const files = textFiles();
  assert.ok(files.some((f) => f.file === "docs/design.md"), "docs/design.md is not tracked");
  const found: string[] = [];
  for (const { file, text } of files) {
    text.split("\n").forEach((line, i) => {
      for (const name of OUTSIDE) if (line.includes(name)) found.push(`${file}:${i + 1}: ${name}`);
    });
  }
  assert.deepEqual(found, [], "cite the repository's own page (docs/design.md, docs/*.md)");
});

Deno.test("every docs/<page>.md a tracked file cites exists", () => {
  const missing: string[] = [];
  for (const { file, text } of textFiles()) {
    if (file.startsWith("bench/results/") && file.endsWith(".json")) continue;
    for (const m of text.matchAll(/\bdocs\/([a-z0-9_-]+)\.md\b/g)) {
      if (!existsSync(join(root, "docs", `${m[1]}.md`))) missing.push(`${file}: ${m[0]}`);
    }
  }
  assert.deepEqual(missing, [], "a cited page that does not exist");
});

/** The anchors GitHub makes for a markdown file's headings. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of text.matchAll(/^#+\s+(.*)$/gm)) {
    anchors.add(m[1].trim().toLowerCase().replace(/[^\w\- ]/g, "").replaceAll(" ", "-"));
  }
  return anchors;
}

Deno.test("every relative link in the markdown files points at a file (and heading) that exists", () => {
  const markdown = textFiles().filter((f) => f.file.endsWith(".md"));
  const texts = new Map(markdown.map((f) => [f.file, f.text]));
  const broken: string[] = [];
  for (const { file, text } of markdown) {
    const prose = text.replace(/^```[\s\S]*?^```/gm, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split("#");
      const resolved = path === "" ? file : relative(root, join(root, file, "..", path));
      if (!existsSync(join(root, resolved))) {
        broken.push(`${file}: ${target}`);
        continue;
      }
      if (anchor && resolved.endsWith(".md")) {
        const doc = texts.get(resolved) ?? readFileSync(join(root, resolved), "utf8");
        if (!anchorsOf(doc).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, [], "a link to a file or heading that does not exist");
});
