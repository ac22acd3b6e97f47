/**
 * Test helper for the operator's refound (lib/cluster/divergence/refound.ts), shared by refound_test.ts
 * and refound_crash_test.ts: the binary's `switchboard cluster ...` commands, a cluster whose
 * every node refuses to rebuild, and the restart the docs prescribe once the log is re-founded,
 * checking that every node takes writes and holds every acknowledged write.
 *
 * How every node comes to refuse: node 3 is fed another message at position 40 and stops; node
 * 1 another one at 60, and nodes 1 and 2 then disagree with each other and with node 3: every
 * node stops. Every node then reads yet another message at position 20 (as from a stream leader
 * whose replica diverged there), so every rebuild is refused: the whole cluster answers 503.
 */
import assert from "node:assert/strict";
import { connect } from "nats";
import { call, sdkFor } from "../pubsub/helpers.ts";
import { serverCommand, type TestServer } from "../helpers/server.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startCluster, type SwitchboardCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

/** The position every node reads another message at once it stopped. */
export const OTHER_AT = 20;
/** A refused rebuild's reason on `/readyz`. */
export const REFUSED = /the log no longer holds writes a majority confirmed/;
/** The ledger object written to. */
export const KEY = "refound";

/** `switchboard cluster ...` as an operator runs it (the binary when SWITCHBOARD_BIN is set),
 * with `env` added to the environment. */
export async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  const { cmd, args: pre } = serverCommand();
  const r = await new Deno.Command(cmd, {
    args: [...pre, "cluster", ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

/** A node's `/readyz` status and reason. */
export async function readyz(node: TestServer): Promise<{ status: number; reason?: string }> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  const body = await r.json();
  return { status: r.status, reason: body.reason };
}

/** The log stream's first and last position and message count. */
export async function logState(urls: string[]): Promise<number[]> {
  const nc = await connect({ servers: urls });
  try {
    const { state } = await (await nc.jetstreamManager()).streams.info("SWITCHBOARD");
    return [state.first_seq, state.last_seq, state.messages];
  } finally {
    await nc.close();
  }
}

/** A cluster whose every node refuses to rebuild (see the module comment). */
export interface RefusingCluster {
  cluster: SwitchboardCluster;
  /** Every acknowledged write: value -> its position. */
  written: Map<string, number>;
  /** A channel a subscriber joined early (a majority confirmed it), and its cursor then. */
  topic: string;
  cursor: Record<string, unknown>;
}

/**
 * Starts three nodes with the fault hooks that make every one refuse to rebuild, writes through
 * node 2 until the cluster stops, and waits until every node refuses (a write then gets 503).
 * The caller stops the cluster.
 */
export async function startRefusingCluster(): Promise<RefusingCluster> {
  const faults: Record<number, Record<string, string>> = {
    0: { SWITCHBOARD_FAULT_FORK_AT: "60", SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
    1: { SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
    2: { SWITCHBOARD_FAULT_FORK_AT: "40", SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
  };
  const cluster = await startCluster({
    env: {
      SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300",
      SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000",
    },
    nodeEnv: (i) => faults[i],
  });
  try {
    const [n1, n2] = cluster.nodes;
    // A subscriber's cursor on a channel, taken early (a majority confirmed it).
    const topic = "pubsub:key1:refound-news";
    await sdkFor(n2).trigger("refound-news", "e", { n: 1 });
    const sock = await RawSocket.connect(n2.wsUrl("key1"));
    const first = await sock.join(topic, {});
    assert.equal(first.status, "ok");
    await sock.close();
    const cursor = { after_serial: first.response.serial, epoch: first.response.epoch };
    // Written through node 2 until every node stopped; value -> its acked position.
    const written = new Map<string, number>();
    for (let i = 1; i < 200; i++) {
      const r = await fetch(`${n2.baseUrl}${path(KEY)}/append`, {
        method: "POST",
        headers: n2.headers(n2.apps[0]),
        body: JSON.stringify({ slot: "l", value: `v${i}` }),
      });
      await r.body?.cancel();
      if (r.status === 200) written.set(`v${i}`, Number(r.headers.get("switchboard-position")));
      else break;
    }
    assert.ok(
      written.size >= 40,
      `writes acknowledged before the cluster stopped: ${written.size}`,
    );
    for (const node of cluster.nodes) {
      await until(
        "the node refuses to rebuild",
        async () => REFUSED.test((await readyz(node)).reason ?? ""),
        90_000,
      );
    }
    const write = await call(n1, "POST", `${path(KEY)}/append`, { slot: "l", value: "refused" });
    assert.equal(write.status, 503);
    return { cluster, written, topic, cursor };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/**
 * After a refound on `chosen` at position `base`, with every node stopped: starts the nodes as
 * the docs say (the fault hooks still on), the re-founded node first, the other one of nodes 1
 * and 2 on its kept data dir (it rebuilds from the new base, the guard checking its confirmed
 * history), node 3 on an emptied one (it restores the new base before it listens). Checks that
 * every node takes writes (each write is added to `written`) and that every node holds every
 * acknowledged write, in the order of its position. Returns the started nodes.
 */
export async function startAfterRefound(
  cluster: SwitchboardCluster,
  chosen: string,
  base: number,
  written: Map<string, number>,
): Promise<TestServer[]> {
  const dirs = cluster.nodes.map((n) => n.dataDir);
  const kept = [0, 1].find((i) => dirs[i] !== chosen)!;
  for (const entry of Deno.readDirSync(dirs[2])) {
    Deno.removeSync(`${dirs[2]}/${entry.name}`, { recursive: true });
  }
  for (const i of [dirs.indexOf(chosen), kept, 2]) await cluster.restart(i);
  const nodes = cluster.nodes;
  for (const node of nodes) {
    await until(
      "the node takes writes again",
      async () => (await readyz(node)).status === 200,
      90_000,
    );
  }
  assert.match(nodes[kept].output(), new RegExp(`cluster store replaced.*position.*${base}`));
  assert.doesNotMatch(
    nodes[kept].output(),
    /ERROR +cluster unavailable: the log no longer holds|cluster rebuild refused again/,
    "the guard passed",
  );
  assert.match(
    nodes[2].output(),
    new RegExp(`cluster store restored from a snapshot.*position.*${base}`),
  );
  // Every node takes writes, and holds every acknowledged write where it was acked.
  for (const [i, node] of nodes.entries()) {
    written.set(`after-${i}`, await appendAt(node, KEY, `after-${i}`));
  }
  await until("every node holds the same object", async () => {
    const bodies = await Promise.all(nodes.map((n) => call(n, "GET", path(KEY))));
    return bodies.every((b) =>
      JSON.stringify(b.body) === JSON.stringify(bodies[0].body) &&
      b.body.state.l.includes("after-2")
    );
  }, 30_000);
  // Every acknowledged write, in the order of its position (a write that got a 503 may be
  // there too: its outcome was unknown).
  const acked = [...written].sort((a, b) => a[1] - b[1]).map(([v]) => v);
  for (const node of nodes) {
    const list: string[] = (await call(node, "GET", path(KEY))).body.state.l;
    assert.deepEqual(list.filter((v) => written.has(v)), acked);
  }
  return nodes;
}
