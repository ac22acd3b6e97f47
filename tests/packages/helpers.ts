// The consumer side of the package tests: builds the tarballs (`deno task pack`), then installs
// them with `npm install ./file.tgz` into one temp folder OUTSIDE the repository, as an
// application would, together with what such an app brings itself (React, Vite, TypeScript,
// the AI SDK, ws, zod). One install per test process, shared by every test of tests/packages/
// (npm from the registry is the slow part). Plus small process helpers.
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { tempDir } from "../helpers/temp_dir.ts";
export { until } from "../helpers/until.ts";

export const root = new URL("../../", import.meta.url).pathname;
const bin = (name: string) => join(root, "node_modules/.bin", name);

/** The result of a finished command. */
export interface Ran {
  code: number;
  out: string;
}

/** Runs a command to completion (never throws on a non-zero exit); stdout and stderr merged. */
export async function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<Ran> {
  const result = await new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
  return { code: result.code, out: text };
}

/** Like `run`, but throws with the output when the exit code is not 0. */
export async function runOk(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}:\n${r.out}`);
  return r.out;
}

/** A long-running child process with its output collected. */
export interface Started {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `re` in the output (20 s cap). */
  waitFor(re: RegExp): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

/** Starts `cmd` in `cwd`; stop() sends SIGTERM, then SIGKILL after 3 s. */
export function start(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Started {
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: { ...Deno.env.toObject(), ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  child.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return {
    child,
    output: () => out,
    async waitFor(re) {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        const m = out.match(re);
        if (m) return m;
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${cmd} ${args.join(" ")}: no ${re} in its output:\n${out}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** The installed consumer folder. */
export interface Consumer {
  dir: string;
  /** The tarball file names, as `npm install` got them. */
  tarballs: string[];
  /** What `npm install` printed. */
  installLog: string;
}

let installed: Promise<Consumer> | undefined;

/** The repository's range for an npm package (dependencies or devDependencies). */
function rootRange(name: string): string {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const range = pkg.dependencies?.[name] ?? pkg.devDependencies?.[name];
  if (!range) throw new Error(`package.json has no ${name}`);
  return range;
}

/** Packs the packages and installs them into a temp consumer folder (once per process). */
export function consumer(): Promise<Consumer> {
  installed ??= (async () => {
    await runOk(bin("bun"), ["scripts/pack_packages.ts"], { cwd: root });
    const dir = tempDir("sb-consumer-");
    const tarballs = readdirSync(join(root, "dist/packages")).filter((f) => f.endsWith(".tgz"))
      .sort();
    if (tarballs.length !== 4) throw new Error(`dist/packages holds ${tarballs.join(", ")}`);
    for (const t of tarballs) copyFileSync(join(root, "dist/packages", t), join(dir, t));
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: "consumer-app", private: true, type: "module" }),
    );
    // npm 10 cannot install Vite 8 on this machine kind; Vite 7 is the one it can.
    const npmMajor = Number((await runOk("npm", ["--version"], { cwd: dir })).trim().split(".")[0]);
    const app = [
      "react",
      "react-dom",
      "@types/react",
      "@types/react-dom",
      "typescript",
      "ai",
      "@ai-sdk/react",
      "ws",
      "zod",
      "bun",
    ]
      .map((name) => `${name}@${rootRange(name)}`);
    const installLog = await runOk("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      ...tarballs.map((t) => `./${t}`),
      ...app,
      npmMajor >= 11 ? "vite@^8" : "vite@^7",
    ], { cwd: dir });
    return { dir, tarballs, installLog };
  })();
  return installed;
}

/** A free loopback port. */
export function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  return port;
}

/** The repository's deno and bun, for running consumer code under those runtimes. */
export const DENO = Deno.execPath();
export const BUN = bin("bun");

/**
 * A Node.js binary of major version `major` for the consumer in `dir`: the machine's `node` when
 * it is that version, the Node 22 that .ci/run keeps, else the `node@{major}` package from npm
 * installed into `dir`.
 */
export async function nodeBinary(dir: string, major: 20 | 22): Promise<string> {
  const version = await run("node", ["--version"], { cwd: dir }).catch(() => ({
    code: 1,
    out: "",
  }));
  if (version.code === 0 && version.out.trim().startsWith(`v${major}.`)) return "node";
  const kept = join(homedir(), `.cache/switchboard-node${major}/node_modules/.bin/node`);
  if (existsSync(kept)) return kept;
  const prefix = join(dir, `node${major}`);
  await runOk("npm", ["install", "--no-audit", "--no-fund", "--prefix", prefix, `node@${major}`], {
    cwd: dir,
  });
  return join(prefix, "node_modules/.bin/node");
}
