// Which test files start a server process, read from the source. A module starts one when it
// spawns the server itself (a `spawn(`, `Deno.Command`, `execFile` or `Bun.spawn` in a file that
// names `main.ts`, `SWITCHBOARD_BIN`, `dist/switchboard` or `serverCommand`), as
// tests/helpers/server.ts does; a test file starts one when it imports such a module, directly
// or through other test modules (`import type` does not count: it runs nothing). Used by
// tests/architecture/server_processes_test.ts; `deno run -A tests/architecture/server_processes.ts`
// prints the list.
//
// The count is of the suite's run from source: tests/helpers/in_process.ts starts the server in
// the test process, and the binary (through tests/helpers/server.ts) only when SWITCHBOARD_BIN is
// set, for CI's run against the product; its import of server.ts is not followed.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ROOT, sourceFiles } from "./imports.ts";

const SPAWNS = /\bspawn\(|Deno\.Command|\bexecFile|Bun\.spawn/;
const NAMES_SERVER = /main\.ts|SWITCHBOARD_BIN|dist\/switchboard|serverCommand/;
/** Static imports and re-exports, with whether they are type-only. */
const IMPORT =
  /(?:^|[;\n}])\s*(import|export)\s+(type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["'](\.[^"'\n]+)["']/g;
/** Helpers that start a process only in the run against the binary (see above). */
const IN_PROCESS_FROM_SOURCE = new Set(["tests/helpers/in_process.ts"]);
const DYNAMIC = /\bimport\s*\(\s*["'](\.[^"'\n]+)["']\s*\)/g;

/** Comment text removed (line and block comments outside strings are rare enough in tests that
 * a line-based strip is exact here: no test names a spawn inside a string with `//`). */
function code(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** The test modules `file` runs when imported (type-only imports left out). */
function valueImports(file: string): string[] {
  const src = code(readFileSync(join(ROOT, file), "utf8"));
  const out: string[] = [];
  for (const m of src.matchAll(IMPORT)) {
    if (!m[2]) out.push(m[3]);
  }
  for (const m of src.matchAll(DYNAMIC)) out.push(m[1]);
  return out
    .map((spec) => relative(ROOT, resolve(ROOT, dirname(file), spec)))
    .filter((f) => f.startsWith("tests/") && existsSync(join(ROOT, f)));
}

/** True when `file`'s own code spawns the server. */
function spawnsItself(file: string): boolean {
  const src = code(readFileSync(join(ROOT, file), "utf8"));
  return SPAWNS.test(src) && NAMES_SERVER.test(src);
}

/** Every test file (`*_test.ts`/`*_test.tsx` under tests/) that starts a server process, sorted. */
export function serverProcessTests(): string[] {
  const files = sourceFiles("tests");
  const memo = new Map<string, boolean>();
  const starts = (file: string, seen: Set<string>): boolean => {
    const known = memo.get(file);
    if (known !== undefined) return known;
    if (seen.has(file)) return false;
    seen.add(file);
    const result = !IN_PROCESS_FROM_SOURCE.has(file) &&
      (spawnsItself(file) || valueImports(file).some((f) => starts(f, seen)));
    memo.set(file, result);
    return result;
  };
  return files.filter((f) => /_test\.tsx?$/.test(f) && starts(f, new Set()));
}

if (import.meta.main) {
  const list = serverProcessTests();
  for (const f of list) console.log(f);
  console.log(`${list.length} test files start a server process`);
}
