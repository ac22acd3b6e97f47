/**
 * The docs check (called by .ci/docs_check, from .ci/run): runs every shell block of README.md
 * and docs/*.md that is marked `<!-- docs-check: run -->`, as written, in a fresh copy of the
 * repository (its tracked files, no node_modules) with a PATH that has no deno or bun of the
 * repository's, the way a new user runs them after cloning. Files run in order (README.md
 * first, so its `npm ci` sets up the copy); each command must exit 0 in time; servers (see
 * SERVERS) start in the background on a free PORT, must print their ready line and answer
 * `GET /` with 200, and are stopped (their whole process group) when their file is done.
 *
 *   npx deno run -A tests/docs/run_docs.ts [--keep]     # --keep leaves the copy for a look
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import process from "node:process";
import { type Block, blocksOf, commandsOf, docFiles, serverOf } from "./docs_blocks.ts";

const root = new URL("../../", import.meta.url).pathname;
/** Per command; `npm ci` and the compile get more. */
const COMMAND_TIMEOUT_MS = 240_000;
const READY_TIMEOUT_MS = 120_000;
/** The whole check. */
const TOTAL_TIMEOUT_MS = 15 * 60_000;

interface Server {
  command: string;
  child: ChildProcess;
  output: () => string;
}

/** A copy of the tracked files (as in the working tree) in a new temp dir. */
function copyRepository(): string {
  const dir = mkdtempSync(join(tmpdir(), "sb-docs-check-"));
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0")
    .filter(Boolean);
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    try {
      copyFileSync(join(root, f), join(dir, f));
    } catch {
      // a tracked file deleted in the working tree
    }
  }
  return dir;
}

/** The environment of a new user: no node_modules/.bin on PATH, no deno or bun variables. */
function userEnv(): Record<string, string> {
  const env = { ...process.env } as Record<string, string>;
  env.PATH = (env.PATH ?? "").split(delimiter).filter((p) => !p.includes("node_modules")).join(
    delimiter,
  );
  for (const k of Object.keys(env)) {
    if (/^(SWITCHBOARD_|DENO_|BUN_|PORT$|DATA_DIR$|APP_)/.test(k)) delete env[k];
  }
  return env;
}

/** A free loopback port. */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Runs one command with bash in `cwd`; resolves with its output, rejects on exit != 0 or timeout. */
function runCommand(command: string, cwd: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], {
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
    child.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
    const timer = setTimeout(() => {
      killGroup(child, "SIGKILL");
      reject(new Error(`timed out after ${COMMAND_TIMEOUT_MS / 1000} s:\n${out.slice(-3000)}`));
    }, COMMAND_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`exit ${code}:\n${out.slice(-3000)}`));
    });
  });
}

/** Starts a server command in its own process group; resolves once it is ready and answers `/`. */
async function startServer(
  command: string,
  cwd: string,
  env: Record<string, string>,
  ready: RegExp,
): Promise<Server> {
  const port = freePort();
  const child = spawn("bash", ["-c", command], {
    cwd,
    env: { ...env, PORT: String(port) },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  child.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  const server = { command, child, output: () => out };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!ready.test(out)) {
    if (child.exitCode !== null) {
      throw new Error(`exited ${child.exitCode} before it was ready:\n${out.slice(-3000)}`);
    }
    if (Date.now() > deadline) {
      await stop(server);
      throw new Error(`not ready in ${READY_TIMEOUT_MS / 1000} s:\n${out.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = await fetch(`http://127.0.0.1:${port}/`);
  await res.body?.cancel();
  if (res.status !== 200) {
    await stop(server);
    throw new Error(`GET / on port ${port} answered ${res.status}`);
  }
  return server;
}

/** Signals a child's whole process group (npx, sh, deno...). */
function killGroup(child: ChildProcess, signal: "SIGTERM" | "SIGKILL") {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Whether any process of the child's group is still alive (zombies included). */
function groupAlive(child: ChildProcess): boolean {
  try {
    if (child.pid) process.kill(-child.pid, 0);
    return !!child.pid;
  } catch {
    return false;
  }
}

/**
 * SIGTERM to the group, SIGKILL after 10 s; resolves once the whole group has gone (at most
 * 15 s), so the next block's server never meets this one's lock or port.
 */
async function stop(server: Server): Promise<void> {
  killGroup(server.child, "SIGTERM");
  const deadline = Date.now() + 15_000;
  let killed = false;
  while (groupAlive(server.child) && Date.now() < deadline) {
    if (!killed && Date.now() > deadline - 5_000) {
      killGroup(server.child, "SIGKILL");
      killed = true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  killGroup(server.child, "SIGKILL"); // anything left in the group
}

async function main(): Promise<number> {
  const blocks: Block[] = docFiles(root).flatMap((f) => blocksOf(root, f).filter((b) => b.run));
  const dir = copyRepository();
  const env = userEnv();
  const servers: Server[] = [];
  const overall = setTimeout(() => {
    console.error(`docs check: over ${TOTAL_TIMEOUT_MS / 60_000} minutes, stopping`);
    for (const s of servers) killGroup(s.child, "SIGKILL");
    Deno.exit(1);
  }, TOTAL_TIMEOUT_MS);
  console.log(`docs check: ${blocks.length} blocks in ${dir}`);
  let failed = 0;
  try {
    for (const [i, block] of blocks.entries()) {
      for (const command of commandsOf(block.body)) {
        const where = `${block.file}:${block.line}`;
        const started = Date.now();
        const server = serverOf(command);
        try {
          if (server) servers.push(await startServer(command, dir, env, server.ready));
          else await runCommand(command, dir, env);
          console.log(
            `ok    ${where}  ${command}  (${((Date.now() - started) / 1000).toFixed(1)} s${
              server ? ", serving" : ""
            })`,
          );
        } catch (err) {
          failed++;
          console.log(`FAIL  ${where}  ${command}\n${(err as Error).message}`);
        }
      }
      // A file's servers stop when its blocks are done (the next file may start its own).
      if (blocks[i + 1]?.file !== block.file) {
        for (const s of servers.splice(0)) await stop(s);
      }
    }
  } finally {
    for (const s of servers.splice(0)) await stop(s);
    clearTimeout(overall);
    if (Deno.args.includes("--keep")) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    failed ? `docs check: ${failed} command(s) failed` : "docs check: every marked command ran",
  );
  return failed ? 1 : 0;
}

Deno.exit(await main());
