// The operator's way back when every node refuses to rebuild (lib/cluster/refound.ts,
// docs/cluster.md "When every node refuses to rebuild (operator)"). Node 3 is fed another
// message at position 40 and stops; node 1 another one at 60, and nodes 1 and 2 then disagree
// with each other and with node 3: every node stops. Every node then reads yet another message
// at position 20 (as from a stream leader whose replica diverged there), so every rebuild is
// refused: the whole cluster answers 503. The operator stops the nodes, runs `switchboard
// cluster status` and `switchboard cluster refound` as documented, and starts them again (the
// fault hooks still on; node 3 on an emptied data dir): every node takes writes, every acknowledged write is on every node,
// their objects are identical, and a subscriber resuming gets a reset snapshot.
import assert from "node:assert/strict";
import { call, sdkFor } from "../pubsub/helpers.ts";
import { serverCommand, type TestServer } from "../helpers/server.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { connect } from "nats";
import { startCluster, until } from "./cluster.ts";
import { appendAt, path } from "./writers.ts";

const OTHER_AT = 20;
const REFUSED = /the log no longer holds writes a majority confirmed/;
const KEY = "refound";

/** `switchboard cluster ...` as an operator runs it (the binary when SWITCHBOARD_BIN is set). */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  const { cmd, args: pre } = serverCommand();
  const r = await new Deno.Command(cmd, { args: [...pre, "cluster", ...args], stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

async function readyz(node: TestServer): Promise<{ status: number; reason?: string }> {
  const r = await fetch(`${node.baseUrl}/readyz`);
  const body = await r.json();
  return { status: r.status, reason: body.reason };
}

/** The log stream's first and last position and message count. */
async function logState(urls: string[]): Promise<number[]> {
  const nc = await connect({ servers: urls });
  try {
    const { state } = await (await nc.jetstreamManager()).streams.info("SWITCHBOARD");
    return [state.first_seq, state.last_seq, state.messages];
  } finally {
    await nc.close();
  }
}

/** How many of the log's replicas its leader reports offline, or has not heard from for 5 s. */
async function offlineReplicas(urls: string[]): Promise<number> {
  const nc = await connect({ servers: urls });
  try {
    const info = await (await nc.jetstreamManager({ timeout: 2000 })).streams.info("SWITCHBOARD");
    return (info.cluster?.replicas ?? []).filter((r) => r.offline || r.active > 5e9).length;
  } finally {
    await nc.close();
  }
}

Deno.test({
  name: "cluster refound: every node refuses to rebuild; status + refound bring the cluster back with every acknowledged write",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const faults: Record<number, Record<string, string>> = {
      0: { SWITCHBOARD_FAULT_FORK_AT: "60", SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
      1: { SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
      2: { SWITCHBOARD_FAULT_FORK_AT: "40", SWITCHBOARD_FAULT_OTHER_AT: String(OTHER_AT) },
    };
    const cluster = await startCluster({
      env: { SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "300", SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: "4000" },
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
      assert.ok(written.size >= 40, `writes acknowledged before the cluster stopped: ${written.size}`);
      for (const node of cluster.nodes) {
        await until("the node refuses to rebuild", async () => REFUSED.test((await readyz(node)).reason ?? ""), 90_000);
      }
      const write = await call(n1, "POST", `${path(KEY)}/append`, { slot: "l", value: "refused" });
      assert.equal(write.status, 503);

      // The operator: stop every node, look at the stores, re-found on the one the status names.
      const dirs = cluster.nodes.map((n) => n.dataDir);
      const nats = cluster.nats.urls.join(",");
      const logBefore = await logState(cluster.nats.urls);
      const early = await cli(["refound", "--data-dir", dirs[1], "--nats", nats]);
      assert.notEqual(early.code, 0);
      assert.match(early.out, /data dir .* is in use by process \d+: stop every node first \(nothing changed\)/, early.out);
      // A copy of a running node's store (not locked): the nodes' heartbeats are heard.
      const copy = tempDir("sb-refound-copy-");
      const { cmd, args: pre } = serverCommand();
      const backup = await new Deno.Command(cmd, { args: [...pre, "backup", `${copy}/switchboard.mdb`, "--data-dir", dirs[1]], stdout: "null", stderr: "null" }).output();
      assert.equal(backup.code, 0);
      const running = await cli(["refound", "--data-dir", copy, "--nats", nats]);
      assert.notEqual(running.code, 0);
      assert.match(running.out, /nodes still running: node-1, node-2, node-3; stop every node first \(nothing changed\)/, running.out);
      for (let i = 0; i < 3; i++) await cluster.nodes[i].stop();
      const status = await cli(["status", "--data-dir", dirs[0], dirs[1], dirs[2]]);
      assert.equal(status.code, 0, status.out);
      assert.match(status.out, /diverged: +yes/);
      const chosen = /re-found on: (\S+) \(holds/.exec(status.out)?.[1];
      assert.ok(chosen && chosen !== dirs[2], status.out);
      // A nats-server down: one of the log's replicas is offline, and would bring its old
      // history back when it returns.
      await cluster.nats.kill(2);
      await until("the log's replica on the killed server is offline", async () => (await offlineReplicas(cluster.nats.urls.slice(0, 2))) > 0, 30_000);
      const down = await cli(["refound", "--data-dir", chosen, "--nats", nats]);
      assert.notEqual(down.code, 0);
      assert.match(down.out, /the log's replicas on \S+ are offline: start every nats-server first \(nothing changed\)/, down.out);
      await cluster.nats.restart(2);
      await until("every replica of the log is back", async () => (await offlineReplicas(cluster.nats.urls)) === 0 && (await logState(cluster.nats.urls))[1] === logBefore[1], 30_000);
      // Node 3 confirmed less: re-founding on it would lose what nodes 1 and 2 confirmed.
      const wrong = await cli(["refound", "--data-dir", dirs[2], "--nats", cluster.nats.urls.join(","), dirs[0], dirs[1]]);
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.out, /refusing to re-found on .*confirmed up to position \d+, past .* \(nothing changed/, wrong.out);
      assert.deepEqual(await logState(cluster.nats.urls), logBefore, "the refusals changed nothing");
      const others = dirs.filter((d) => d !== chosen);
      const done = await cli(["refound", "--data-dir", chosen, "--nats", cluster.nats.urls.join(","), ...others]);
      assert.equal(done.code, 0, done.out);
      const base = Number(/re-founded the cluster log on \S+ at position (\d+)/.exec(done.out)?.[1]);
      assert.ok(base >= Math.max(...written.values()), done.out);
      assert.match((await cli(["status", "--data-dir", chosen])).out, /diverged: +no/);

      // Started again, the fault hooks still on: the other one of nodes 1 and 2 on its kept
      // data dir (it rebuilds from the new base, the guard checking its confirmed history),
      // node 3 on an emptied one (it restores the new base before it listens).
      const kept = [0, 1].find((i) => dirs[i] !== chosen)!;
      for (const entry of Deno.readDirSync(dirs[2])) Deno.removeSync(`${dirs[2]}/${entry.name}`, { recursive: true });
      for (const i of [dirs.indexOf(chosen), kept, 2]) await cluster.restart(i);
      const nodes = cluster.nodes;
      for (const node of nodes) await until("the node takes writes again", async () => (await readyz(node)).status === 200, 90_000);
      assert.match(nodes[kept].output(), new RegExp(`cluster store replaced.*position.*${base}`));
      assert.doesNotMatch(nodes[kept].output(), /ERROR +cluster unavailable: the log no longer holds|cluster rebuild refused again/, "the guard passed");
      assert.match(nodes[2].output(), new RegExp(`cluster store restored from a snapshot.*position.*${base}`));
      // Every node takes writes, and holds every acknowledged write where it was acked.
      for (const [i, node] of nodes.entries()) written.set(`after-${i}`, await appendAt(node, KEY, `after-${i}`));
      await until("every node holds the same object", async () => {
        const bodies = await Promise.all(nodes.map((n) => call(n, "GET", path(KEY))));
        return bodies.every((b) => JSON.stringify(b.body) === JSON.stringify(bodies[0].body) && b.body.state.l.includes("after-2"));
      }, 30_000);
      // Every acknowledged write, in the order of its position (a write that got a 503 may be
      // there too: its outcome was unknown).
      const list: string[] = (await call(nodes[0], "GET", path(KEY))).body.state.l;
      const acked = [...written].sort((a, b) => a[1] - b[1]).map(([v]) => v);
      assert.deepEqual(list.filter((v) => written.has(v)), acked);
      // A subscriber resuming from its old cursor gets a fresh snapshot, on every node.
      await until("every stream's epoch is renewed", () => Promise.resolve(/cluster renewed the epochs/.test(nodes.map((n) => n.output()).join(""))), 30_000);
      for (const node of nodes) {
        await until("a resume from the old cursor is reset", async () => {
          const s = await RawSocket.connect(node.wsUrl("key1"));
          try {
            const reply = await s.join(topic, cursor);
            return reply.status === "ok" && reply.response.replay === "reset";
          } finally {
            await s.close();
          }
        }, 30_000);
      }
    } finally {
      await cluster.stop();
    }
  },
});
