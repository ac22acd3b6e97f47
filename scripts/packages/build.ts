// Builds the four npm packages (packages/<name>/) from the SDK sources in sdk/: JavaScript with
// `bun build` (one ES module per package, its dependencies, peers and @switchboard/client left
// as imports) and `.d.ts` files with `tsc --emitDeclarationOnly` (packages/tsconfig.build.json),
// whose relative `.ts` specifiers are rewritten to the package's own `.js` / `.d.ts` layout.
// Every build is checked before it is accepted: no `.ts` specifier left, every relative type
// import resolves inside the package, every bare import is a declared dependency or peer, and
// the manifests agree with the server's version and the tested `ai` range.
// Runs under Bun only; Bun's types are not part of the Deno type check.
// deno-lint-ignore no-explicit-any
declare const Bun: any;
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative } from "node:path";

export const root = new URL("../../", import.meta.url).pathname;

/** The four packages, in build order (client first: the others depend on it). */
export const PACKAGES = ["client", "server", "react", "ai"] as const;
export type PackageName = typeof PACKAGES[number];

/** The server's version (lib/version.ts), which every package carries. */
export function serverVersion(): string {
  const text = readFileSync(join(root, "lib/version.ts"), "utf8");
  const m = text.match(/VERSION = "([^"]+)"/);
  if (!m) throw new Error("lib/version.ts has no VERSION");
  return m[1];
}

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

/** The package's manifest, after checking it against the server's version and root ranges. */
export function manifest(name: PackageName): Manifest {
  const m = readJson<Manifest>(join(root, "packages", name, "package.json"));
  const version = serverVersion();
  const rootPkg = readJson<{ version: string; devDependencies: Record<string, string> }>(
    join(root, "package.json"),
  );
  const problems: string[] = [];
  if (m.name !== `@switchboard/${name}`) problems.push(`name is ${m.name}`);
  if (m.version !== version) problems.push(`version ${m.version} is not the server's ${version}`);
  if (rootPkg.version !== version) {
    problems.push(`root package.json version ${rootPkg.version} != ${version}`);
  }
  const client = m.dependencies?.["@switchboard/client"];
  if ((name === "react" || name === "ai") && client !== version) {
    problems.push(`@switchboard/client dependency ${client} is not ${version}`);
  }
  // The `ai` peer range is exactly the range the repository's tests install.
  if (name === "ai" && m.peerDependencies?.ai !== rootPkg.devDependencies.ai) {
    problems.push(
      `peer ai ${m.peerDependencies?.ai} != the tested range ${rootPkg.devDependencies.ai}`,
    );
  }
  if (problems.length) throw new Error(`packages/${name}/package.json: ${problems.join("; ")}`);
  return m;
}

/** Bare module names a package may import: its dependencies and peers. */
function allowedImports(m: Manifest): Set<string> {
  return new Set([...Object.keys(m.dependencies ?? {}), ...Object.keys(m.peerDependencies ?? {})]);
}

/** Bun plugin: the React and AI bindings import the client SDK as the published package. */
const clientAsPackage = {
  name: "client-as-package",
  setup(build: any) {
    build.onResolve({ filter: /(^|\/)client\/mod\.ts$/ }, () => ({
      path: "@switchboard/client",
      external: true,
    }));
  },
};

/** Builds `packages/<name>/dist/index.js` (unminified ES module) and returns its text. */
export async function buildJs(
  name: PackageName,
  outdir = join(root, "packages", name, "dist"),
): Promise<string> {
  const m = manifest(name);
  const result = await Bun.build({
    entrypoints: [join(root, "sdk", name, "mod.ts")],
    outdir,
    naming: "index.js",
    target: "browser",
    format: "esm",
    minify: false,
    external: [...allowedImports(m)].filter((d) => !d.startsWith("@types/")),
    plugins: name === "react" || name === "ai" ? [clientAsPackage] : [],
  });
  if (!result.success) {
    throw new Error(`bun build of ${name} failed:\n${result.logs.map(String).join("\n")}`);
  }
  const js = readFileSync(join(outdir, "index.js"), "utf8");
  const bare = importsOf(js).filter((s) => !s.startsWith("."));
  const allowed = allowedImports(m);
  for (const spec of bare) {
    const pkg = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
    if (!allowed.has(pkg)) {
      throw new Error(`${name}/dist/index.js imports ${spec}, not a dependency`);
    }
  }
  if (importsOf(js).some((s) => s.startsWith("."))) {
    throw new Error(`${name}/dist/index.js has a relative import left`);
  }
  return js;
}

/** Module specifiers in `from "x"`, `import "x"`, `import("x")` and `export ... from "x"`. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])([^"'\n]+)\1/g;
  for (const m of text.matchAll(re)) out.push(m[2]);
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/**
 * Copies the declarations of `sdk/<name>/` (and, for the server and the client, `sdk/shared/`:
 * the wire types both sides use) into the
 * package's dist, renaming mod.d.ts to index.d.ts and rewriting specifiers.
 */
function copyTypes(name: PackageName, typesDir: string): void {
  const dist = join(root, "packages", name, "dist");
  const sources: [string, string][] = filesUnder(join(typesDir, name)).map((
    f,
  ) => [f, relative(join(typesDir, name), f)]);
  if (name === "server" || name === "client") {
    for (const f of filesUnder(join(typesDir, "shared"))) {
      sources.push([f, join("shared", relative(join(typesDir, "shared"), f))]);
    }
  }
  for (const [from, rel] of sources) {
    const target = join(dist, rel === "mod.d.ts" ? "index.d.ts" : rel);
    let text = readFileSync(from, "utf8");
    text = text.replace(/(["'])(\.{1,2}\/[^"'\n]+?)\.ts\1/g, (_all, q: string, spec: string) => {
      if (/(^|\/)client\/mod$/.test(spec) && name !== "client") {
        return `${q}@switchboard/client${q}`;
      }
      // The package's declarations sit at dist/, the shared ones at dist/shared/.
      if ((name === "server" || name === "client") && !rel.startsWith("shared/")) {
        spec = spec.replace(/^\.\.\/shared\//, "./shared/");
      }
      return `${q}${spec.endsWith("/mod") ? spec.slice(0, -3) + "index" : spec}.js${q}`;
    });
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  }
  // Every relative import resolves to a declaration file inside the package; no `.ts` left.
  for (const file of filesUnder(dist).filter((f) => f.endsWith(".d.ts"))) {
    const text = readFileSync(file, "utf8");
    for (const spec of importsOf(text)) {
      if (/\.tsx?$/.test(spec)) throw new Error(`${relative(root, file)} still imports ${spec}`);
      if (!spec.startsWith(".")) {
        const pkg = spec.startsWith("@")
          ? spec.split("/").slice(0, 2).join("/")
          : spec.split("/")[0];
        const m = manifest(name);
        if (!allowedImports(m).has(pkg) && !allowedImports(m).has(`@types/${pkg}`)) {
          throw new Error(`${relative(root, file)} imports ${spec}, not a dependency or peer`);
        }
        continue;
      }
      const target = join(dirname(file), spec.replace(/\.js$/, ".d.ts"));
      if (!existsSync(target)) {
        throw new Error(
          `${relative(root, file)} imports ${spec}: ${relative(root, target)} is missing`,
        );
      }
    }
  }
}

/** Builds every package (JS and types) into packages/<name>/dist. */
export async function buildAll(): Promise<void> {
  const typesDir = join(root, "dist/packages-types");
  rmSync(typesDir, { recursive: true, force: true });
  for (const name of PACKAGES) {
    rmSync(join(root, "packages", name, "dist"), { recursive: true, force: true });
  }
  execFileSync(join(root, "node_modules/.bin/tsc"), [
    "-p",
    join(root, "packages/tsconfig.build.json"),
  ], {
    stdio: "inherit",
  });
  for (const name of PACKAGES) {
    await buildJs(name);
    copyTypes(name, typesDir);
    console.error(`built packages/${name}/dist`);
  }
  rmSync(typesDir, { recursive: true, force: true });
}
