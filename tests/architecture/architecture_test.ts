// The architecture, kept as written: no import cycle between files or between lib's folders,
// no import against the layer order of docs/architecture.md ("Layers": a file imports its own
// row or rows above it in that table), a header comment opening every file under lib/,
// routes/ and sdk/, and lmdb imported only by the stores (lib/store/, lib/cluster/): products,
// the console and the webhook outbox hold the seam's `Table` (lib/store/table.ts). The import graph is read from the source by tests/architecture/imports.ts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  collapse,
  cycles,
  folderOf,
  type Graph,
  importSpecifiers,
  moduleGraph,
  ROOT,
  sourceFiles,
} from "./imports.ts";

const FILES = [...sourceFiles("lib"), ...sourceFiles("routes"), ...sourceFiles("sdk"), "main.ts"];
const graph = moduleGraph(FILES);

/** The rows of the layer table, bottom first: each row's folders (`lib/store/`) and files. */
function layerRows(): string[][] {
  const doc = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
  const start = doc.indexOf("## Layers");
  assert.ok(start >= 0, "docs/architecture.md has no Layers section");
  const end = doc.indexOf("\n## ", start + 1);
  const rows: string[][] = [];
  for (const line of doc.slice(start, end < 0 ? undefined : end).split("\n")) {
    if (!line.startsWith("| `")) continue;
    const cell = line.split("|")[1];
    rows.push([...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
  }
  return rows;
}

const ROWS = layerRows();

/** The row of `file`: the longest table entry naming it (a folder it is in, or itself). */
function rowOf(file: string): { row: number; entry: string } | undefined {
  let best: { row: number; entry: string } | undefined;
  ROWS.forEach((entries, row) => {
    for (const entry of entries) {
      const hit = entry.endsWith("/") ? file.startsWith(entry) : file === entry;
      if (hit && (!best || entry.length > best.entry.length)) best = { row, entry };
    }
  });
  return best;
}

Deno.test("architecture: the import parser reads every form of import and export", () => {
  const src = [
    `import a from "./a.ts";`,
    `import type { B } from '../b.ts';`,
    `import {`,
    `  c,`,
    `  type D,`,
    `} from "./c.ts";`,
    `export { e } from "./e.ts";`,
    `export * from "./f.ts";`,
    `export type { G } from "./g.ts";`,
    `import "./side.ts";`,
    `const h = await import("./h.ts");`,
    `// import x from "./commented.ts";`,
    `/* export * from "./block.ts"; */`,
    `const s = "import y from './in_string.ts'";`,
    `export const notAnImport = 1;`,
  ].join("\n");
  assert.deepEqual(importSpecifiers(src), [
    "./a.ts",
    "../b.ts",
    "./c.ts",
    "./e.ts",
    "./f.ts",
    "./g.ts",
    "./side.ts",
    "./h.ts",
  ]);
});

Deno.test("architecture: the cycle finder reports a cycle and passes a DAG", () => {
  assert.deepEqual(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])), [[
    "a",
    "b",
    "c",
    "a",
  ]]);
  assert.deepEqual(cycles(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]])), []);
});

Deno.test("architecture: the graph is the project's (not vacuously empty)", () => {
  const edges = [...graph.values()].reduce((n, s) => n + s.size, 0);
  assert.ok(FILES.length > 150 && edges > 400, `${FILES.length} files, ${edges} edges`);
  assert.ok(graph.get("lib/server.ts")!.has("lib/store/ordered_log.ts"));
  assert.ok(ROWS.length >= 10, `layer table has ${ROWS.length} rows`);
});

Deno.test("architecture: no import cycle between files", () => {
  const found = cycles(graph);
  assert.deepEqual(found.map((c) => c.join(" -> ")), []);
});

Deno.test("architecture: no import cycle between folders (lib/store/, lib/socket/, ..., lib/product.ts)", () => {
  const folders = collapse(graph as Graph, folderOf);
  const found = cycles(new Map([...folders].map(([k, v]) => [k, [...v.keys()]])));
  const explain = found.map((c) =>
    c.slice(1).map((to, i) => folders.get(c[i])!.get(to)).join(", ")
  );
  assert.deepEqual(explain, []);
});

Deno.test("architecture: every file is in the layer table and imports only its own row or rows above", () => {
  const problems: string[] = [];
  for (const file of FILES) {
    if (!rowOf(file)) problems.push(`${file} is in no row of docs/architecture.md "Layers"`);
  }
  for (const [from, tos] of graph) {
    const a = rowOf(from);
    for (const to of tos) {
      const b = rowOf(to);
      if (!a) continue;
      if (!b) problems.push(`${from} imports ${to}, which is in no row of the layer table`);
      else if (b.row > a.row) {
        problems.push(`${from} (${a.entry}) imports ${to} (${b.entry}), a higher layer`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("architecture: every file under lib/, routes/ and sdk/ opens with a header comment", () => {
  const missing = FILES.filter((file) => {
    const text = readFileSync(join(ROOT, file), "utf8").replace(/^#!.*\n/, "").trimStart();
    return !(text.startsWith("//") || text.startsWith("/*"));
  });
  assert.deepEqual(missing, []);
});

Deno.test("architecture: only the stores (lib/store/, lib/cluster/) import lmdb; the rest holds the seam's Table", () => {
  const importers = FILES.filter((file) =>
    importSpecifiers(readFileSync(join(ROOT, file), "utf8")).includes("lmdb")
  );
  // Not vacuous: the stores themselves import it.
  assert.ok(importers.includes("lib/store/env.ts"), "lib/store/env.ts imports lmdb");
  assert.ok(importers.includes("lib/cluster/replicated_env.ts"));
  assert.deepEqual(
    importers.filter((f) => !f.startsWith("lib/store/") && !f.startsWith("lib/cluster/")),
    [],
  );
});
