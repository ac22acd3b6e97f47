// The import graph of the project's own modules, read from the source: a small parser of
// static `import ... from`, `export ... from`, side-effect `import "..."` and dynamic
// `import("...")` with a literal specifier (relative specifiers only: packages are leaves).
// Used by tests/architecture/architecture_test.ts; `deno run -A tests/architecture/imports.ts`
// prints the folder graph of lib/ and any cycles.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** The repository root. */
export const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "../..");

/** Every `.ts`/`.tsx` file under `dir` (relative to ROOT), sorted. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(ROOT, d)).sort()) {
      const rel = join(d, name);
      if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
      else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(rel);
    }
  };
  walk(dir);
  return out;
}

/** Removes comments (keeping string literals intact), so commented-out imports are not read. */
function stripComments(src: string): string {
  let out = "";
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === "/" && src[i + 1] === "/") {
      while (i < src.length && src[i] !== "\n") i++;
    } else if (c === "/" && src[i + 1] === "*") {
      const end = src.indexOf("*/", i + 2);
      i = end < 0 ? src.length : end + 2;
    } else if (c === '"' || c === "'" || c === "`") {
      const start = i++;
      while (i < src.length && src[i] !== c) i += src[i] === "\\" ? 2 : 1;
      out += src.slice(start, ++i);
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const STATIC =
  /(?:^|[;\n}])\s*(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"'\n]+)["']/g;
const DYNAMIC = /\bimport\s*\(\s*["']([^"'\n]+)["']\s*\)/g;

/** The specifiers `src` imports or re-exports (static and literal dynamic), in order. */
export function importSpecifiers(src: string): string[] {
  const code = stripComments(src);
  const found: string[] = [];
  for (const re of [STATIC, DYNAMIC]) {
    for (const m of code.matchAll(re)) found.push(m[1]);
  }
  return found;
}

/** The project files `file` imports (relative specifiers resolved against ROOT). */
export function localImports(file: string): string[] {
  const src = readFileSync(join(ROOT, file), "utf8");
  const out = new Set<string>();
  for (const spec of importSpecifiers(src)) {
    if (!spec.startsWith(".")) continue;
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
    if (!existsSync(join(ROOT, target))) {
      throw new Error(`${file} imports ${spec}, which does not exist`);
    }
    out.add(target);
  }
  return [...out];
}

/** A directed graph as adjacency sets. */
export type Graph = Map<string, Set<string>>;

/** The module graph of `files` (edges to files outside `files` are kept as leaves). */
export function moduleGraph(files: string[]): Graph {
  const g: Graph = new Map();
  for (const f of files) g.set(f, new Set(localImports(f)));
  return g;
}

/** The folder of a lib/ file: `lib/store/env.ts` -> `lib/store/`; a file at lib's top is its own node. */
export function folderOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] === "sdk" && parts.length > 2) return `sdk/${parts[1]}/`;
  if (parts.length > 2) return `${parts[0]}/${parts[1]}/`;
  return file;
}

/** `g` collapsed by `key` (self-edges dropped), each edge with one file-level example. */
export function collapse(
  g: Graph,
  key: (file: string) => string,
): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const [from, tos] of g) {
    const a = key(from);
    if (!out.has(a)) out.set(a, new Map());
    for (const to of tos) {
      const b = key(to);
      if (a !== b && !out.get(a)!.has(b)) out.get(a)!.set(b, `${from} -> ${to}`);
    }
  }
  return out;
}

/** Every elementary cycle found by a depth-first search (each reported once, as a path). */
export function cycles(g: Map<string, Iterable<string>>): string[][] {
  const found: string[][] = [];
  const seen = new Set<string>();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, "open");
    stack.push(n);
    for (const m of g.get(n) ?? []) {
      if (state.get(m) === "open") {
        const cyc = stack.slice(stack.indexOf(m));
        const id = [...cyc].sort().join(" ");
        if (!seen.has(id)) {
          seen.add(id);
          found.push([...cyc, m]);
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of [...g.keys()].sort()) if (!state.has(n)) visit(n);
  return found;
}

if (import.meta.main) {
  const g = moduleGraph(sourceFiles("lib"));
  const folders = collapse(g, folderOf);
  for (const [a, tos] of [...folders].sort()) {
    console.log(a.padEnd(20), [...tos.keys()].sort().join(" "));
  }
  console.log("module cycles:", cycles(g).map((c) => c.join(" -> ")));
  const fg = new Map([...folders].map(([k, v]) => [k, v.keys()] as const));
  console.log(
    "folder cycles:",
    cycles(new Map([...fg].map(([k, v]) => [k, [...v]]))).map((c) => c.join(" -> ")),
  );
}
