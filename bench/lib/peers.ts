// Peer servers run in the same benchmark session (issue 18: "peers in the same run"): found on
// PATH (Debian packages: `apt-get install redis-server nats-server`), never downloaded by the
// bench itself; a missing one is reported by name instead of its rows.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A started peer. */
export interface Peer {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** The path of `program` on PATH or in /usr/sbin, or null. */
export function findProgram(program: string): string | null {
  const dirs = [...(Deno.env.get("PATH") ?? "").split(":"), "/usr/sbin", "/usr/local/sbin"];
  for (const dir of dirs) if (dir && existsSync(join(dir, program))) return join(dir, program);
  return null;
}

/** A free loopback port (bound, then released). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * Starts redis-server with every write fsynced before its reply (`appendonly yes`,
 * `appendfsync always`), on a fresh dir on the local disk; null when redis-server is missing.
 */
export async function startRedis(): Promise<Peer | null> {
  const bin = findProgram("redis-server");
  if (!bin) return null;
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-redis-"));
  const port = freePort();
  const child = spawn(bin, [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--daemonize",
    "no",
    "--protected-mode",
    "no",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  await waitFor(child, /Ready to accept connections/, "redis-server");
  return peer(child, port, dir);
}

/** A started peer: stopping it ends the process and removes its data dir. */
function peer(child: ChildProcess, port: number, dir: string): Peer {
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitFor(child: ChildProcess, pattern: RegExp, what: string): Promise<void> {
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${out}`)), 15_000);
    const onData = (c: Uint8Array) => {
      out += new TextDecoder().decode(c);
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${out}`));
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/**
 * Starts nats-server with JetStream on a fresh store dir on the local disk; null when
 * nats-server is missing. Debian's 2.9 acknowledges a JetStream publish before any fsync (it has
 * no `sync_interval: always`), so its rows are labelled not durable.
 */
export async function startJetStream(): Promise<Peer | null> {
  const bin = findProgram("nats-server");
  if (!bin) return null;
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-js-"));
  const port = freePort();
  const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  await waitFor(child, /Server is ready/, "nats-server");
  return peer(child, port, dir);
}
