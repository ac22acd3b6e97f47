/**
 * Test helper: a NATS JetStream cluster of real `nats-server` processes on loopback (Debian's
 * package, `apt-get install nats-server`), each with its own store dir, stopped by `stop()`;
 * optionally the last one in its own network namespace (`makePartition`), to cut it off.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { connect } from "nats";

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

/**
 * A network namespace joined to the host by a veth pair (`ip netns`, iproute2; needs root):
 * a server started in it is reachable at `inner` from the host, and `cut()` takes the link
 * down (its connections then go silent, like a partitioned machine's) until `mend()`.
 */
export interface Partition {
  name: string;
  /** The host's address on the link, and the namespace's. */
  outer: string;
  inner: string;
  cut(): void;
  mend(): void;
  /** Deletes the namespace and its link (also when processes inside were killed). */
  remove(): void;
}

function ip(...args: string[]): { ok: boolean; err: string } {
  try {
    const out = new Deno.Command("ip", { args, stdout: "null", stderr: "piped" }).outputSync();
    return { ok: out.success, err: new TextDecoder().decode(out.stderr).trim() };
  } catch (err) {
    return { ok: false, err: String(err) };
  }
}

/** Makes a namespace with a veth link to the host, or says why the machine does not allow it
 * (not root, no iproute2, no netns support). */
export function makePartition(): Partition | string {
  const tag = Math.floor(Math.random() * 0xffff).toString(16).padStart(4, "0");
  const name = `sbnemesis-${tag}`;
  const [hostIf, nsIf] = [`sbh${tag}`, `sbn${tag}`];
  const net = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 250)}`;
  const [outer, inner] = [`${net}.1`, `${net}.2`];
  const remove = () => {
    ip("netns", "del", name);
    ip("link", "del", hostIf);
  };
  const steps: string[][] = [
    ["netns", "add", name],
    ["link", "add", hostIf, "type", "veth", "peer", "name", nsIf],
    ["link", "set", nsIf, "netns", name],
    ["addr", "add", `${outer}/30`, "dev", hostIf],
    ["link", "set", hostIf, "up"],
    ["-n", name, "addr", "add", `${inner}/30`, "dev", nsIf],
    ["-n", name, "link", "set", nsIf, "up"],
    ["-n", name, "link", "set", "lo", "up"],
  ];
  for (const step of steps) {
    const r = ip(...step);
    if (!r.ok) {
      remove();
      return `ip ${step.join(" ")}: ${r.err || "failed"}`;
    }
  }
  return {
    name,
    outer,
    inner,
    cut: () => void ip("link", "set", hostIf, "down"),
    mend: () => void ip("link", "set", hostIf, "up"),
    remove,
  };
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
  /** The folder holding each node's store dir (`<dir>/n1`, ...), removed by `stop()`. */
  dir: string;
  /** SIGKILLs node `i`. */
  kill(i: number): Promise<void>;
  /** Starts node `i` again with its store dir. */
  restart(i: number): Promise<void>;
  /** Sends `signal` to node `i` (SIGSTOP freezes it, SIGCONT resumes it). */
  signal(i: number, signal: NodeJS.Signals): void;
  /** Stops every node and removes the store dirs. */
  stop(): Promise<void>;
  /** With `partition`: the namespace the last server runs in (cut it off with `cut()`). */
  partition?: Partition;
}

/**
 * Resolves once JetStream answers through `urls` (a fresh cluster first elects its meta
 * leader, 4-9 s with nats-server 2.9.10 and longer on a loaded machine: a node started before
 * that waits for it inside its own start, which a test's start timeout then counted; CI saw a
 * first node print nothing after `starting` for 20 s). Fails after `ms`.
 */
async function waitJetStream(urls: string[], ms: number): Promise<void> {
  const nc = await connect({
    servers: urls,
    timeout: 2000,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
  });
  const deadline = Date.now() + ms;
  try {
    for (;;) {
      try {
        const jsm = await nc.jetstreamManager({ timeout: 2000 });
        await jsm.getAccountInfo();
        return;
      } catch (err) {
        if (Date.now() > deadline) {
          throw new Error(`JetStream not usable at ${urls.join(",")} within ${ms} ms: ${err}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await nc.close();
  }
}

/** Starts `size` nats-server nodes clustered on loopback with JetStream on; resolves once each
 * accepts connections and JetStream answers. */
export async function startNatsCluster(size = 3, partition?: Partition): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "sb-nats-"));
  // SWITCHBOARD_NATS_LOG_DIR: where the servers write their logs (kept after the run).
  const natsLogDir = process.env.SWITCHBOARD_NATS_LOG_DIR;
  const nodes: Node[] = [];
  for (let i = 0; i < size; i++) {
    nodes.push({
      name: `n${i + 1}`,
      port: await freePort(),
      routePort: await freePort(),
      conf: "",
    });
  }
  // With a partition, the last server lives in its namespace (its address there), the others
  // take routes on every address (the namespace reaches them at the link's host end).
  const inNs = (i: number) => partition !== undefined && i === size - 1;
  const host = (i: number) => (inNs(i) ? partition!.inner : "127.0.0.1");
  for (const [i, n] of nodes.entries()) {
    n.conf = join(dir, `${n.name}.conf`);
    const seen = (j: number) => (inNs(i) && !inNs(j) ? partition!.outer : host(j));
    const routes = nodes.map((o, j) => `nats-route://${seen(j)}:${o.routePort}`).join(", ");
    const routeListen = partition && !inNs(i) ? "0.0.0.0" : host(i);
    writeFileSync(
      n.conf,
      [
        `server_name: ${n.name}`,
        `listen: ${host(i)}:${n.port}`,
        `max_payload: 8MB`,
        // A route to a frozen server stays open while it takes any byte, and once 32 MB (half
        // of the default 64 MB) wait on it, nats-server 2.9.10 holds every client that sends it
        // a message for 0.1-1 s a message (the nodes' connections answered nothing for
        // seconds); docs/cluster.md, "nats-server settings production needs".
        `max_pending: ${process.env.SWITCHBOARD_NATS_MAX_PENDING ?? "1GB"}`,
        // The long nemesis's log reaches about 2 GB (write sets of long lists, up to 140 KB):
        // at its limit JetStream 2.9.10 turns itself off (docs/cluster.md, "Disk for
        // JetStream"), so the limit is set well above what a run writes.
        `jetstream { store_dir: "${
          join(dir, n.name)
        }", max_memory_store: 64MB, max_file_store: 16GB }`,
        // For studying a run: each server's own log (slow consumers, routes lost and made).
        natsLogDir ? `log_file: "${join(natsLogDir, `${n.name}.log`)}"\nlogtime: true` : "",
        size > 1
          ? `cluster { name: sb, listen: ${routeListen}:${n.routePort}, no_advertise: true, routes: [${routes}] }`
          : "",
      ].join("\n"),
    );
  }
  const start = async (n: Node, i: number) => {
    const [cmd, args] = inNs(i)
      ? ["ip", ["netns", "exec", partition!.name, natsServerBin(), "-c", n.conf]]
      : [natsServerBin(), ["-c", n.conf]];
    n.proc = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    n.proc.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
    await waitPort(host(i), n.port, 10_000, () => err);
  };
  await Promise.all(nodes.map(start));
  const urls = nodes.map((n, i) => `nats://${host(i)}:${n.port}`);
  const stopNode = async (n: Node, signal: NodeJS.Signals) => {
    const p = n.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill(signal);
    await exited;
  };
  const cluster: NatsCluster = {
    urls,
    dir,
    partition,
    kill: (i) => stopNode(nodes[i], "SIGKILL"),
    restart: (i) => start(nodes[i], i),
    // Deno's node:child_process marks a process as ended once it was sent any signal, and then
    // sends it no other: a SIGSTOPped server never got its SIGCONT (it stayed frozen for the
    // rest of the run, and after it). Signals other than the final kill go through Deno.kill.
    signal: (i, signal) => sendSignal(nodes[i].proc, signal),
    async stop() {
      for (const n of nodes) sendSignal(n.proc, "SIGCONT");
      partition?.mend();
      await Promise.all(nodes.map((n) => stopNode(n, "SIGKILL")));
      partition?.remove();
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
  try {
    await waitJetStream(urls, 60_000);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** Sends `signal` to `proc` while it runs (see `signal` above for why not `proc.kill`). */
function sendSignal(proc: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (!proc?.pid || proc.exitCode !== null) return;
  try {
    Deno.kill(proc.pid, signal as Deno.Signal);
  } catch { /* already gone */ }
}

async function waitPort(
  hostname: string,
  port: number,
  ms: number,
  why: () => string,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const conn = await Deno.connect({ hostname, port });
      conn.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`nats-server on ${port} did not start: ${why()}`);
}
