/**
 * Test helper: a Switchboard cluster on loopback, N Switchboard nodes (each its own data dir)
 * on a 3-node NATS JetStream cluster. Nodes can be SIGKILLed and restarted on their data dir;
 * `stop()` ends every process, also after a failure.
 */
import { APPS, startServer, type TestApp, type TestServer } from "../helpers/server.ts";
import { type NatsCluster, type Partition, startNatsCluster } from "./nats_servers.ts";

/** A running cluster. */
export interface SwitchboardCluster {
  nats: NatsCluster;
  nodes: TestServer[];
  /** SIGKILLs Switchboard node `i`. */
  kill(i: number): Promise<void>;
  /** Starts node `i` again on its data dir (a new port). */
  restart(i: number): Promise<TestServer>;
  stop(): Promise<void>;
}

/** Options: node count and extra environment for every node. */
export interface ClusterOptions {
  nodes?: number;
  env?: Record<string, string>;
  /** Environment for one node only. */
  nodeEnv?: (i: number) => Record<string, string>;
  /** The apps file of every node (default: the test apps). */
  apps?: TestApp[];
  /** Runs the third nats-server in this network namespace (`makePartition`). */
  partition?: Partition;
  /** The nats-servers (indexes) node `i` is given with `--nats`, in order (default: all three,
   * its own first). */
  nodeNats?: (i: number) => number[];
}

/** Node environment in which the healthy nodes do not hear a stopped node ask for a snapshot
 * (`lib/cluster/divergence/rebuild.ts` `wantSnapshot`): one reaching the position it disagrees at, or its
 * confirmed one, would end a refusal or a hold (asked_snapshot_test.ts runs those). */
export const NO_ASKED_SNAPSHOT = { SWITCHBOARD_FAULT_IGNORE_SNAPSHOT_ASKS: "1" };

/** Starts NATS (3 servers) and `nodes` Switchboard nodes on it (node i prefers NATS server i). */
export async function startCluster(opts: ClusterOptions = {}): Promise<SwitchboardCluster> {
  const nats = await startNatsCluster(3, opts.partition);
  const nodes: TestServer[] = [];
  const dataDirs: (string | undefined)[] = [];
  const start = async (i: number) => {
    const urls = (opts.nodeNats?.(i).map((n) => nats.urls[n]) ??
      [...nats.urls.slice(i % 3), ...nats.urls.slice(0, i % 3)]).join(",");
    const server = await startServer({
      apps: opts.apps ?? APPS,
      dataDir: dataDirs[i],
      args: ["--nats", urls, "--node-id", `node-${i + 1}`],
      env: { ...opts.env, ...opts.nodeEnv?.(i) },
      // A node restarted with a store marked diverged rebuilds (or reads the whole log into a
      // refused rebuild) before it listens: a minute on a long nemesis log.
      startMs: 120_000,
    });
    dataDirs[i] = server.dataDir;
    nodes[i] = server;
    return server;
  };
  try {
    for (let i = 0; i < (opts.nodes ?? 3); i++) await start(i);
  } catch (err) {
    await Promise.all(nodes.map((n) => n.kill()));
    await nats.stop();
    throw err;
  }
  return {
    nats,
    nodes,
    kill: (i) => nodes[i].kill(),
    restart: (i) => start(i),
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
      await nats.stop();
    },
  };
}

/** The status of `node`'s /readyz. */
export async function readyStatus(node: TestServer): Promise<number> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  await r.body?.cancel();
  return r.status;
}

/** Polls `fn` (an error counts as false) until it holds; fails after `ms`. */
export async function until(what: string, fn: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not within ${ms} ms: ${what}`);
}

/**
 * The fork tests' cluster: three nodes with quick presence heartbeats and a 4 s write deadline
 * (plus `env`), where node 3 alone gets `node3` (the fault hooks that fork it; a function is
 * called at each start and restart of node 3).
 */
export function startForkedCluster(
  node3: Record<string, string> | (() => Record<string, string>),
  env: Record<string, string> = {},
): Promise<SwitchboardCluster> {
  return startCluster({
    env: {
      SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300",
      SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000",
      ...env,
    },
    nodeEnv: (i) => (i !== 2 ? {} : typeof node3 === "function" ? node3() : node3),
  });
}
