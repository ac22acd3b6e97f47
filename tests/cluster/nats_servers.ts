/**
 * Test helper: a NATS JetStream cluster of real `nats-server` processes on loopback (Debian's
 * package, `apt-get install nats-server`), each with its own store dir, stopped by `stop()`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";

/** A free loopback TCP port (bound once and released). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The nats-server binary: `NATS_SERVER`, else Debian's path, else `nats-server` on PATH. */
export function natsServerBin(): string {
  const env = process.env.NATS_SERVER;
  if (env) return env;
  for (const p of ["/usr/sbin/nats-server", "/usr/bin/nats-server"]) {
    try {
      Deno.statSync(p);
      return p;
    } catch { /* next */ }
  }
  return "nats-server";
}

interface Node {
  name: string;
  port: number;
  routePort: number;
  conf: string;
  proc?: ChildProcess;
}

/** A running loopback JetStream cluster. */
export interface NatsCluster {
  /** Client URLs, one per node. */
  urls: string[];
  /** SIGKILLs node `i`. */
  kill(i: number): Promise<void>;
  /** Starts node `i` again with its store dir. */
  restart(i: number): Promise<void>;
  /** Sends `signal` to node `i` (SIGSTOP freezes it, SIGCONT resumes it). */
  signal(i: number, signal: NodeJS.Signals): void;
  /** Stops every node and removes the store dirs. */
  stop(): Promise<void>;
}

/** Starts `size` nats-server nodes clustered on loopback with JetStream on; resolves once each
 * accepts connections. */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "sb-nats-"));
  const nodes: Node[] = [];
  for (let i = 0; i < size; i++) {
    nodes.push({ name: `n${i + 1}`, port: await freePort(), routePort: await freePort(), conf: "" });
  }
  for (const n of nodes) {
    n.conf = join(dir, `${n.name}.conf`);
    const routes = nodes.map((o) => `nats-route://127.0.0.1:${o.routePort}`).join(", ");
    writeFileSync(
      n.conf,
      [
        `server_name: ${n.name}`,
        `listen: 127.0.0.1:${n.port}`,
        `max_payload: 8MB`,
        `jetstream { store_dir: "${join(dir, n.name)}", max_memory_store: 64MB, max_file_store: 2GB }`,
        size > 1 ? `cluster { name: sb, listen: 127.0.0.1:${n.routePort}, routes: [${routes}] }` : "",
      ].join("\n"),
    );
  }
  const start = async (n: Node) => {
    n.proc = spawn(natsServerBin(), ["-c", n.conf], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    n.proc.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
    await waitPort(n.port, 10_000, () => err);
  };
  await Promise.all(nodes.map(start));
  const stopNode = async (n: Node, signal: NodeJS.Signals) => {
    const p = n.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill(signal);
    await exited;
  };
  return {
    urls: nodes.map((n) => `nats://127.0.0.1:${n.port}`),
    kill: (i) => stopNode(nodes[i], "SIGKILL"),
    restart: (i) => start(nodes[i]),
    signal: (i, signal) => void nodes[i].proc?.kill(signal),
    async stop() {
      for (const n of nodes) n.proc?.kill("SIGCONT");
      await Promise.all(nodes.map((n) => stopNode(n, "SIGKILL")));
      // A server's files may still be settling just after its exit: try a few times.
      for (let attempt = 1;; attempt++) {
        try {
          rmSync(dir, { recursive: true, force: true });
          break;
        } catch (err) {
          if (attempt === 5) throw err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
  };
}

async function waitPort(port: number, ms: number, why: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`nats-server on ${port} did not start: ${why()}`);
}
