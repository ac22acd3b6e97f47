// The cluster nemesis (issue 35): 3 nats-servers and 3 Switchboard nodes (the binary) on
// loopback, writers on every node at once (list appends and counter increments on shared
// objects), while faults hit one at a time: SIGSTOP and SIGKILL of a nats-server (the stream's
// leader and not), SIGSTOP and SIGKILL of a Switchboard node, and a network partition: the
// third nats-server runs in its own network namespace joined to the host by a veth pair, whose
// link goes down (needs root and iproute2; elsewhere the fault is skipped with a printed line,
// and the namespace is deleted when the run ends, failed or not).
//
// A node fed other messages by a NATS replica that diverged stops itself (`lib/cluster/
// agreement.ts`) and rebuilds its store by itself (`lib/cluster/divergence/rebuild.ts`); once writes stop,
// such nodes must be back (ready) within 2 minutes, and are checked like the others. One fault
// makes that happen on purpose, since JetStream does it only now and then: node 1 is restarted
// with the fault hooks of a diverged replica (`SWITCHBOARD_FAULT_FORK_AT` a few hundred
// positions ahead, `SWITCHBOARD_FAULT_OTHER_AT` at a position a majority confirmed), so it
// stops, its rebuild from the log is refused, and it must come back within 2 minutes through a
// snapshot it asks the others for (`rebuild.ts` `wantSnapshot`), with the path it took
// printed. At the end, each nats-server's store files are compared (`nats_replicas.ts`): the
// positions at which JetStream's replicas hold different messages are counted.
//
// Checks, on every other node once writes stop: every acknowledged write is in the final state at its
// position; the lists are contiguous (length = log_id), without repeats, identical on every
// node; counters are identical and between the acknowledged and the attempted increments;
// real-time order holds (a write sent after another was acknowledged lands after it); every
// write got an answer within the write deadline after it was sent, plus 1 s (requests in
// flight to a frozen node excepted); no node logged a crash. Recorded per fault: the
// longest time without an acknowledged write on each live node ("stall"), JetStream's own
// stall in the same window (`jetstream_probe.ts`: plain clients on each server writing straight
// to the stream), and the slowest /readyz answer and its 503s, beside the slowest answer of an
// idle single Switchboard probed alike (what the machine costs an idle process: its wait for a
// CPU). Each fault's stall must stay within issue 35's bound measured against JetStream's own:
// a fault of the stream's leader, JetStream's own plus 2 s; any other, under 5 s, or
// JetStream's own plus 2 s when JetStream itself stalled longer (a stall JetStream had is
// JetStream's). Environment knobs:
// SWITCHBOARD_NEMESIS_KEEP_LOGS (keep the node logs of a passing run),
// SWITCHBOARD_NEMESIS_ONLY / SWITCHBOARD_NEMESIS_ROUNDS (only the faults whose name contains
// it, that many rounds with --short), SWITCHBOARD_NEMESIS_STRICT=1 (the short form fails on any
// miss of a bound; by default, only on a miss by more than 10 s, as a CI regression guard),
// SWITCHBOARD_NATS_LOG_DIR (each nats-server writes its log there) and
// SWITCHBOARD_NATS_MAX_PENDING (the servers' `max_pending`, 1GB by default).
import { connect } from "nats";
import type { TestServer } from "../tests/helpers/server.ts";
import { startCluster, type SwitchboardCluster } from "../tests/cluster/cluster.ts";
import { makePartition } from "../tests/cluster/nats_servers.ts";
import { crashLines, type PartResult, rng, sleep, start } from "./common.ts";
import { compareReplicas } from "./nats_replicas.ts";
import { type JetStreamProbes, startProbes } from "./jetstream_probe.ts";
import type { ReadyzCommand, ReadyzProbe } from "./readyz_worker.ts";

/** How long the nemesis runs and how hard. */
export interface NemesisBudget {
  ms: number;
  seed: number;
  short: boolean;
}

const DEADLINE_MS = 10_000;
/** The prober's index of the idle control (after the 3 nodes). */
const CONTROL = 3;
/** How far past its bound a fault's stall may go in the short form before the run fails (see
 * the check): the short form runs in CI on a shared machine. */
const REGRESSION_SLACK_MS = 10_000;
/** Judges the short form's stalls against the bound as written. */
const STRICT = Deno.env.get("SWITCHBOARD_NEMESIS_STRICT") === "1";
/** Whether `server`'s /readyz answers 200 within `ms`. */
async function readyWithin(server: TestServer, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(250)) {
    const res = await fetch(`${server.baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) })
      .catch(() => undefined);
    await res?.body?.cancel();
    if (res?.status === 200) return true;
  }
  return false;
}

/** How far ahead of the newest acknowledged position the forked node is fed another message. */
const FORK_AHEAD = 300;
/** A node's answer once it stopped itself (`lib/cluster/divergence/agreement.ts`). */
const DIVERGED = /applied the log differently from a majority of the nodes/;
const LISTS = 3;
const COUNTERS = 3;
const WRITERS_PER_NODE = 3;

interface Op {
  node: number;
  key: string;
  kind: "append" | "increment";
  value: string;
  sent: number;
  answered?: number;
  status?: number;
  logId?: number;
  /** The request's node was frozen while it was in flight (its late answer is expected). */
  frozen?: boolean;
}

/** One fault: its name, what it does, and how it heals. */
interface Fault {
  name: string;
  /** The Switchboard node it takes down (its own writes do not count for the stall). */
  node?: number;
  /** A fault of the stream's leader, and the nats-server it hit. */
  leader?: boolean;
  /** Its target may or may not lead the stream: looked up when it hits. */
  leaderCheck?: boolean;
  target?: () => number;
  apply(): Promise<void>;
  heal(): Promise<void>;
}

/** One `/readyz` probe. */
interface Probe {
  node: number;
  at: number;
  ms: number;
  status: number;
  reason?: string;
}

/** What one fault cost. */
interface FaultReport {
  name: string;
  /** When the fault hit (to line its figures up with the node logs). */
  at: number;
  stallMs: number;
  /** For a leader fault: until another server led the stream (JetStream's election). */
  rawStallMs: number;
  /** JetStream's own stall in the same window: the longest time no probe on a server that
   * stayed up stored and read back a message (`jetstream_probe.ts`), and each server's probe. */
  jsStallMs: number;
  jsPerServer: number[];
  /** The stall this fault may cost (issue 35's goals against JetStream's own), and whether
   * the stall beyond 5 s (or beyond JetStream's own plus 2 s) was JetStream's. */
  boundMs: number;
  /** What the probes saw fail (each kind once per server). */
  jsErrors: string[];
  /** The machine's 1-minute load average as the fault ended (2 cores here). */
  load?: string;
  /** For a `/readyz` over 100 ms: what its node logged around it (holds of its event loop). */
  readyzContext?: string[];
  /** The stall of each node (null: the faulted node). */
  perNode: (number | null)[];
  readyzMaxMs: number;
  /** The slowest `/readyz` of the idle control (`CONTROL`) in the same window. */
  controlMaxMs: number;
  /** The slowest probe (node, when). */
  readyzSlowest?: { node: number; at: number; ms: number };
  readyz503: number;
  /** The reasons the 503s gave (each once). */
  readyzReasons: string[];
}

/** The stream's leader: the index of the nats-server (n1 → 0), or -1 when unknown. */
async function leaderOf(urls: string[], skip: Set<number>): Promise<number> {
  let lastError: unknown;
  // Just after a fault the stream may have no leader yet: ask again for a while.
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const nc = await connect({
        servers: urls.filter((_, i) => !skip.has(i)),
        timeout: 2000,
        maxReconnectAttempts: 0,
      });
      try {
        const jsm = await nc.jetstreamManager({ timeout: 3000 });
        const leader = (await jsm.streams.info("SWITCHBOARD")).cluster?.leader;
        if (leader) return Number(leader.replace(/^n/, "")) - 1;
      } finally {
        await nc.close();
      }
    } catch (err) {
      lastError = err;
    }
    await sleep(500);
  }
  throw new Error(`no stream leader: ${String(lastError)}`);
}

/** Resolves once the stream has a leader and every replica is current (a fault while a
 * replica still catches up would be two faults at once: no quorum of current replicas). */
async function streamHealthy(urls: string[], ms: number): Promise<true | number[]> {
  const deadline = Date.now() + ms;
  let lagging: number[] = [];
  while (Date.now() < deadline) {
    try {
      const nc = await connect({ servers: urls, timeout: 2000, maxReconnectAttempts: 0 });
      try {
        const jsm = await nc.jetstreamManager({ timeout: 3000 });
        const { cluster } = await jsm.streams.info("SWITCHBOARD");
        if (cluster?.leader && (cluster.replicas ?? []).every((r) => r.current && !r.offline)) {
          return true;
        }
        lagging = (cluster?.replicas ?? []).filter((r) => !r.current).map((r) =>
          Number(r.name.replace(/^n/, "")) - 1
        );
      } finally {
        await nc.close();
      }
    } catch { /* not yet */ }
    await sleep(500);
  }
  return lagging;
}

/** Watches which nats-server leads the log's stream (every 250 ms, over its own connection),
 * so each fault's stall can be compared with JetStream's own: how long the stream had no
 * working leader. */
async function leaderWatch(
  urls: string[],
): Promise<{ unusableSince: (t0: number, frozen: number) => number; stop: () => Promise<void> }> {
  const nc = await connect({
    servers: urls,
    pingInterval: 1000,
    maxPingOut: 3,
    timeout: 2000,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  const seen: { at: number; leader: number }[] = [];
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const at = Date.now();
      try {
        const jsm = await nc.jetstreamManager({ timeout: 1000 });
        const leader = (await jsm.streams.info("SWITCHBOARD")).cluster?.leader;
        seen.push({ at, leader: leader ? Number(leader.replace(/^n/, "")) - 1 : -1 });
      } catch {
        seen.push({ at, leader: -1 });
      }
      await sleep(250);
    }
  })();
  return {
    /** Ms from `t0` until the stream was first seen led by a server other than `frozen`
     * (-1: none is excluded), or until now when it never was. */
    unusableSince(t0, frozen) {
      const ok = seen.find((s) => s.at >= t0 && s.leader >= 0 && s.leader !== frozen);
      return (ok?.at ?? Date.now()) - t0;
    },
    async stop() {
      stop = true;
      await loop;
      await nc.close();
    },
  };
}

/** Runs the nemesis (see the module comment). */
export async function clusterNemesis(budget: NemesisBudget): Promise<PartResult> {
  const failures: string[] = [];
  const counts: Record<string, number> = {};
  const random = rng(budget.seed);
  const pauseMs = budget.short ? 6000 : 20_000;
  // Long enough after the heal to see JetStream's own stall then (5 s and more with 2.9.10).
  const recoverMs = budget.short ? 8000 : 10_000;
  // A network partition needs root (network namespaces): where the machine refuses, the
  // partition fault is skipped with a printed line.
  const partition = makePartition();
  if (typeof partition === "string") console.log(`    network partition: skipped (${partition})`);
  let cluster: SwitchboardCluster;
  /** Fault hooks for a node's next start (the fork fault's). */
  const hooks: Record<string, string>[] = [{}, {}, {}];
  try {
    cluster = await startCluster({
      env: {
        SWITCHBOARD_PRESENCE_HEARTBEAT_MS: "500",
        SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS: String(DEADLINE_MS),
      },
      nodeEnv: (i) => hooks[i],
      partition: typeof partition === "string" ? undefined : partition,
    });
  } catch (err) {
    if (typeof partition !== "string") partition.remove();
    throw err;
  }
  // What the machine costs `/readyz`: an idle single Switchboard (the same binary, no
  // cluster, no writes) probed beside the nodes: what it waits is what an idle process waits
  // for a CPU here at that moment (a busy node may wait longer: its hold log's `runq_ms`).
  const control = await start().catch(async (err) => {
    await cluster.stop();
    throw err;
  });
  const ops: Op[] = [];
  /** Nodes writers leave alone (killed or frozen), and frozen nodes. */
  const down = new Set<number>();
  const frozen = new Set<number>();
  /** The output of each node's earlier processes (before a restart). */
  const earlier = ["", "", ""];
  /** Nodes that stopped themselves: they applied the log differently from the others (the
   * fork fault's node aside, while it runs: `forked`). */
  const diverged = new Set<number>();
  const forked = new Set<number>();
  /** The highest log position acknowledged (`Switchboard-Position`). */
  let tail = 0;
  const natsDown = new Set<number>();
  const acks: number[][] = [[], [], []];
  const probes: Probe[] = [];
  const controlProbes: Probe[] = [];
  let stop = false;
  let seq = 0;
  const writer = async (node: number) => {
    while (!stop) {
      if (down.has(node)) {
        await sleep(100);
        continue;
      }
      const kind = random() < 0.5 ? "append" : "increment";
      const key = kind === "append"
        ? `list${Math.floor(random() * LISTS)}`
        : `count${Math.floor(random() * COUNTERS)}`;
      const op: Op = { node, key, kind, value: `v${seq++}`, sent: Date.now() };
      ops.push(op);
      const server = cluster.nodes[node];
      try {
        const body = kind === "append" ? { slot: "l", value: op.value } : { slot: "n" };
        const res = await fetch(`${server.baseUrl}/api/v1/objects/app-1/nemesis/${key}/${kind}`, {
          method: "POST",
          headers: server.headers(),
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(DEADLINE_MS * 2 + pauseMs + 5000),
        });
        op.status = res.status;
        const json = await res.json();
        op.answered = Date.now();
        if (res.status === 200) {
          op.logId = json.log_id;
          tail = Math.max(tail, Number(res.headers.get("switchboard-position") ?? 0));
          acks[node].push(op.answered);
        } else if (res.status !== 503) {
          failures.push(`${kind} on node ${node + 1}: ${res.status} ${JSON.stringify(json)}`);
        } else if (DIVERGED.test(JSON.stringify(json)) && !forked.has(node)) {
          diverged.add(node);
          await sleep(100); // refused at once while it rebuilds
        }
      } catch (err) {
        op.status = 0; // no answer: the node was killed under it, or it hung (checked below)
        if ((err as Error).name === "TimeoutError") {
          failures.push(`${kind} on node ${node + 1} never answered`);
        }
        await sleep(50);
      }
    }
  };
  // `/readyz` is probed from a worker (`readyz_worker.ts`): the nemesis's own main thread
  // (writers, JetStream probes) does not delay the probes or their timing.
  const readyz = new Worker(new URL("./readyz_worker.ts", import.meta.url).href, {
    type: "module",
  });
  const readyzStopped = new Promise<void>((resolve) => {
    readyz.onmessage = (e: MessageEvent<ReadyzProbe | { stopped: true }>) => {
      if ("stopped" in e.data) return resolve();
      const { node, at, ms, status, body } = e.data;
      if (node === CONTROL) return void controlProbes.push({ node, at, ms, status });
      if (down.has(node) && status === 0) return;
      if (body && DIVERGED.test(body) && !forked.has(node)) diverged.add(node);
      const reason = status === 503 && body
        ? (JSON.parse(body) as { reason?: string }).reason
        : undefined;
      probes.push({ node, at, ms, status, reason });
    };
  });
  /** The URLs probed: the nodes, then the idle control (`CONTROL`). */
  const probed = () => [...cluster.nodes.map((n) => n.baseUrl), control.baseUrl];
  /** Marks a node down (writers and the prober leave it alone) or up again. */
  const mark = (node: number, isDown: boolean) => {
    if (isDown) down.add(node);
    else down.delete(node);
    readyz.postMessage({ down: [...down] } satisfies ReadyzCommand);
    readyz.postMessage({ urls: probed(), everyMs: 250 } satisfies ReadyzCommand);
  };

  const natsFault = (
    name: string,
    pick: "leader" | "follower",
    signal: "SIGSTOP" | "SIGKILL",
  ): Fault => {
    let target = -1;
    return {
      name,
      leader: pick === "leader",
      target: () => target,
      async apply() {
        const leader = await leaderOf(cluster.nats.urls, natsDown);
        target = pick === "leader" ? leader : [0, 1, 2].find((i) => i !== leader)!;
        natsDown.add(target);
        if (signal === "SIGSTOP") cluster.nats.signal(target, "SIGSTOP");
        else await cluster.nats.kill(target);
      },
      async heal() {
        if (signal === "SIGSTOP") cluster.nats.signal(target, "SIGCONT");
        else await cluster.nats.restart(target);
        natsDown.delete(target);
      },
    };
  };
  const faults: Fault[] = [
    {
      name: "Switchboard node SIGSTOP",
      node: 2,
      apply() {
        mark(2, true);
        frozen.add(2);
        for (const op of ops) if (op.node === 2 && op.status === undefined) op.frozen = true;
        Deno.kill(cluster.nodes[2].pid, "SIGSTOP");
        return Promise.resolve();
      },
      heal() {
        Deno.kill(cluster.nodes[2].pid, "SIGCONT");
        frozen.delete(2);
        mark(2, false);
        return Promise.resolve();
      },
    },
    {
      name: "Switchboard node SIGKILL, restarted",
      node: 1,
      async apply() {
        mark(1, true);
        await cluster.kill(1);
      },
      async heal() {
        earlier[1] += cluster.nodes[1].output();
        await cluster.restart(1);
        mark(1, false);
      },
    },
    {
      // What a replica that diverged does to a node, made to happen: restarted with the fork
      // hooks, node 1 stops a few hundred positions on, and its rebuild reads another message
      // at a position a majority confirmed, so it is refused; the snapshot it asks for brings
      // it back (the healing is part of the fault: the next one waits for it).
      name: "Switchboard node fed another message (fork hooks), back through an asked snapshot",
      node: 0,
      async apply() {
        mark(0, true);
        forked.add(0);
        await cluster.kill(0);
        earlier[0] += cluster.nodes[0].output();
        hooks[0] = {
          SWITCHBOARD_FAULT_FORK_AT: String(tail + FORK_AHEAD),
          SWITCHBOARD_FAULT_OTHER_AT: String(tail),
        };
        await cluster.restart(0);
        hooks[0] = {};
      },
      async heal() {
        const back = await readyWithin(cluster.nodes[0], 120_000);
        const output = cluster.nodes[0].output();
        const asked = /snapshot_asked=true/.test(output);
        const path = [
          DIVERGED.test(output) ? "stopped" : "did not stop",
          asked ? "rebuild refused, snapshot asked" : "no refusal",
          /cluster store replaced/.test(output) ? "store replaced" : "store not replaced",
        ];
        console.log(
          `    fork fault: node 1 ${back ? "ready again" : "NOT ready within 120 s"} (${
            path.join(", ")
          })`,
        );
        if (!back) failures.push("node 1 (fork fault) was not ready again within 120 s");
        const key = "fork faults back through an asked snapshot";
        counts[key] = (counts[key] ?? 0) + (back && asked ? 1 : 0);
        forked.delete(0);
        mark(0, false);
      },
    },
    // A fault that may leave a replica behind for a while (a freeze) comes after the kills.
    ...(typeof partition === "string" ? [] : [{
      // The third nats-server runs in its own network namespace: its link goes down, so it
      // and every connection to it go silent (its process keeps running, cut off).
      name: "nats-server n3 partitioned (network namespace, link down)",
      leaderCheck: true,
      target: () => 2,
      apply() {
        natsDown.add(2);
        partition.cut();
        return Promise.resolve();
      },
      heal() {
        partition.mend();
        natsDown.delete(2);
        return Promise.resolve();
      },
    } as Fault]),
    natsFault("nats-server (stream leader) SIGKILL, restarted", "leader", "SIGKILL"),
    natsFault("nats-server (not leader) SIGSTOP", "follower", "SIGSTOP"),
    natsFault("nats-server (stream leader) SIGSTOP", "leader", "SIGSTOP"),
    natsFault("nats-server (not leader) SIGKILL, restarted", "follower", "SIGKILL"),
  ];
  // For studying one fault: `SWITCHBOARD_NEMESIS_ONLY` runs the faults whose name contains it,
  // `SWITCHBOARD_NEMESIS_ROUNDS` rounds of them with `--short` (default 1).
  const only = Deno.env.get("SWITCHBOARD_NEMESIS_ONLY");
  const rounds = Number(Deno.env.get("SWITCHBOARD_NEMESIS_ROUNDS") ?? 1);
  const reports: FaultReport[] = [];
  const watch = await leaderWatch(cluster.nats.urls);
  const probe: JetStreamProbes = startProbes(cluster.nats.urls);
  const writers = [0, 1, 2].flatMap((node) =>
    Array.from({ length: WRITERS_PER_NODE }, () => writer(node))
  );
  readyz.postMessage({ urls: probed(), everyMs: 250 } satisfies ReadyzCommand);
  const started = Date.now();
  try {
    await sleep(2000);
    for (let round = 0; round === 0 || Date.now() - started < budget.ms * 0.8; round++) {
      for (const fault of faults.filter((f) => !only || f.name.includes(only))) {
        // One fault at a time: a NATS fault while a replica is still behind would be a second
        // fault at once (no quorum of current replicas): a fault whose stream is not healthy
        // within 20 s is reported as not run.
        if (fault.node === undefined && (await streamHealthy(cluster.nats.urls, 20_000)) !== true) {
          console.log(`    ${fault.name}: not run (a stream replica is still behind)`);
          counts["NATS faults not run (replica behind)"] =
            (counts["NATS faults not run (replica behind)"] ?? 0) + 1;
          continue;
        }
        if (fault.leaderCheck) {
          fault.leader = (await leaderOf(cluster.nats.urls, natsDown)) === fault.target!();
          fault.name = fault.name.replace(/ \(the stream leader\)$/, "") +
            (fault.leader ? " (the stream leader)" : "");
        }
        const t0 = Date.now();
        await fault.apply();
        await sleep(pauseMs);
        await fault.heal();
        await sleep(recoverMs);
        const t1 = Date.now();
        const report = measure(fault, t0, t1, acks, probes, diverged);
        report.controlMaxMs = Math.max(
          0,
          ...controlProbes.filter((p) => p.at >= t0 && p.at <= t1).map((p) => p.ms),
        );
        // JetStream's election: until a leader other than a frozen or killed one leads.
        report.rawStallMs = fault.leader ? watch.unusableSince(t0, fault.target!()) : 0;
        judge(report, fault, probe, t0, t1);
        // A node stopped as diverged still counts as a member: with another node down, no
        // majority of the 3 is left to confirm writes (docs/cluster-internals.md), whatever the
        // stall.
        if (fault.node !== undefined && diverged.size > 0 && !diverged.has(fault.node)) {
          report.boundMs = Infinity;
          report.name += " (no majority: a node stopped as diverged and this one down)";
        }
        report.load = loadAverage();
        const slow = report.readyzSlowest;
        if (slow && slow.ms > 100) {
          report.readyzContext = around(
            earlier[slow.node] + cluster.nodes[slow.node].output(),
            slow.at - 300,
            slow.at + slow.ms + 300,
          );
        }
        reports.push(report);
        await sleep(1000);
      }
      if (budget.short && round + 1 >= rounds) break;
    }
  } catch (err) {
    failures.push(`nemesis step failed: ${String(err)}`);
  } finally {
    stop = true;
    await Promise.all(writers);
    readyz.postMessage({ stop: true } satisfies ReadyzCommand);
    await Promise.race([readyzStopped, sleep(6000)]);
    readyz.terminate();
    await watch.stop();
  }
  for (const r of reports) {
    const nodes = r.perNode.map((ms, i) => `node ${i + 1} ${ms === null ? "down" : secs(ms)}`).join(
      ", ",
    );
    const met = r.stallMs <= r.boundMs;
    console.log(
      `    ${r.name} (at ${new Date(r.at).toISOString().slice(11, 23)}): stall ${
        secs(r.stallMs)
      } s (${nodes}); JetStream's own ${secs(r.jsStallMs)} s ` +
        `(probe via ${r.jsPerServer.map((ms, i) => `n${i + 1} ${secs(ms)}`).join(", ")}` +
        (r.rawStallMs > 0 ? `; new leader after ${secs(r.rawStallMs)} s` : "") + `); ` +
        (r.boundMs === Infinity
          ? "not judged"
          : `bound ${secs(r.boundMs)} s ${met ? "met" : "MISSED"}`) +
        `; /readyz slowest ${r.readyzMaxMs} ms` +
        (r.readyzSlowest
          ? ` (node ${r.readyzSlowest.node + 1} at ${new Date(r.readyzSlowest.at).toISOString()})`
          : "") +
        `, ${r.readyz503} x 503` +
        (r.readyzReasons.length > 0 ? ` (${r.readyzReasons.join("; ")})` : "") +
        `; idle control's slowest ${r.controlMaxMs} ms` +
        (r.load ? `; load ${r.load}` : ""),
    );
    if (r.readyzContext?.length) {
      console.log(`      around the slowest /readyz: ${r.readyzContext.join(" | ")}`);
    }
    if (r.jsErrors.length > 0) {
      console.log(`      JetStream probe errors: ${r.jsErrors.join("; ")}`);
    }
    // Issue 35's goals, against JetStream's own stall in the same window (a stall JetStream
    // itself had is JetStream's, whatever its length): a leader fault may cost JetStream's own
    // plus 2 s; any other fault under 5 s, or JetStream's own plus 2 s when JetStream stalled.
    // The short form (CI, on a shared machine) prints a miss but fails only past the bound plus
    // REGRESSION_SLACK_MS: a guard against a gross regression, not a verdict on the goal, which
    // the long form (and SWITCHBOARD_NEMESIS_STRICT=1) judges as written.
    if (r.stallMs > r.boundMs + (budget.short && !STRICT ? REGRESSION_SLACK_MS : 0)) {
      failures.push(
        `${r.name}: writes stalled ${r.stallMs} ms, over its bound ${r.boundMs} ms (JetStream's own ${r.jsStallMs} ms)`,
      );
    }
  }
  try {
    if (diverged.size > 0) {
      console.log(
        `    stopped as diverged (fed other messages by a NATS replica): node ${
          [...diverged].map((n) => n + 1).join(", ")
        }`,
      );
    }
    // A node that stopped itself rebuilds its store by itself: every node is back, and holds
    // every acknowledged write like the others.
    for (const node of diverged) {
      const back = await readyWithin(cluster.nodes[node], 120_000);
      if (!back) {
        failures.push(`node ${node + 1} stopped as diverged and was not ready again within 120 s`);
      } else console.log(`    node ${node + 1} rebuilt its store and is ready again`);
    }
    // JetStream out of service (no probe got through for the last 10 s): a node left behind
    // then cannot catch up, which is JetStream's doing, not a divergence (see `verify`).
    const jetStreamOut = () => probe.stall(Date.now() - 10_000, Date.now(), [0, 1, 2]) >= 10_000;
    await verify(cluster.nodes, ops, failures, jetStreamOut, counts);
    for (const [i, node] of cluster.nodes.entries()) {
      for (const line of crashLines(earlier[i] + node.output())) {
        failures.push(`node ${i + 1}: ${line}`);
      }
    }
    // How stopped nodes got back: refused rebuilds (the log lost history they confirmed) and
    // the snapshots taken on their request (`lib/cluster/divergence/rebuild.ts` `wantSnapshot`).
    const logs = cluster.nodes.map((n, i) => earlier[i] + n.output()).join("\n");
    counts["rebuilds refused"] =
      logs.match(/ERROR +cluster unavailable: the log no longer holds/g)?.length ?? 0;
    counts["snapshots stored on request"] =
      logs.match(/cluster snapshot stored .*asked_for=/g)?.length ?? 0;
  } finally {
    await probe.stop();
    if (failures.length > 0 || Deno.env.get("SWITCHBOARD_NEMESIS_KEEP_LOGS")) {
      const dir = Deno.makeTempDirSync({ prefix: "sb-nemesis-" });
      for (const [i, n] of cluster.nodes.entries()) {
        Deno.writeTextFileSync(`${dir}/node-${i + 1}.log`, earlier[i] + n.output());
      }
      if (failures.length > 0) failures.push(`node logs in ${dir}`);
      else console.log(`    node logs in ${dir}`);
    }
    for (const n of cluster.nodes) {
      try {
        Deno.kill(n.pid, "SIGCONT");
      } catch { /* gone */ }
    }
    // Whether JetStream's replicas agree, read from each server's store files once it stopped.
    for (let i = 0; i < 3; i++) cluster.nats.signal(i, "SIGCONT");
    for (let i = 0; i < 3; i++) cluster.nats.signal(i, "SIGTERM");
    await sleep(2000);
    const replicas = compareReplicas(cluster.nats.dir, ["n1", "n2", "n3"], "SWITCHBOARD");
    console.log(
      `    NATS stream replicas: last positions ${
        replicas.last.join(" / ")
      }, ${replicas.differing} positions differ`,
    );
    counts["NATS replica positions that differ"] = replicas.differing;
    await cluster.stop().finally(() => control.stop());
  }
  counts["acknowledged writes"] = ops.filter((o) => o.status === 200).length;
  counts["503 (outcome unknown)"] = ops.filter((o) => o.status === 503).length;
  counts["faults"] = reports.length;
  counts["nodes stopped as diverged"] = diverged.size;
  counts["worst stall ms"] = Math.max(0, ...reports.map((r) => r.stallMs));
  counts["worst JetStream stall ms"] = Math.max(0, ...reports.map((r) => r.jsStallMs));
  counts["worst stall beyond JetStream's ms"] = Math.max(
    0,
    ...reports.map((r) => r.stallMs - r.jsStallMs),
  );
  counts["faults over their bound"] = reports.filter((r) => r.stallMs > r.boundMs).length;
  counts["slowest /readyz ms"] = Math.max(0, ...reports.map((r) => r.readyzMaxMs));
  // The machine's share of it: the idle control's slowest in the same windows, and how far the
  // nodes' slowest went beyond it.
  counts["slowest /readyz of the idle control ms"] = Math.max(
    0,
    ...reports.map((r) => r.controlMaxMs),
  );
  counts["slowest /readyz beyond the idle control's ms"] = Math.max(
    0,
    ...reports.map((r) => r.readyzMaxMs - r.controlMaxMs),
  );
  counts["faults with /readyz over 100 ms"] = reports.filter((r) => r.readyzMaxMs > 100).length;
  counts["of them, the idle control also over 100 ms"] =
    reports.filter((r) => r.readyzMaxMs > 100 && r.controlMaxMs > 100).length;
  // Every write gets its answer within the deadline from its arrival (1 s allowed for the
  // request's own way in and out on a loaded machine); a frozen node's requests excepted.
  const timely = ops.filter((o) => o.answered !== undefined && !o.frozen);
  // (a loop, not a spread: a long run's hundreds of thousands of answers overflow the stack)
  counts["slowest answer ms"] = timely.reduce((max, o) => Math.max(max, o.answered! - o.sent), 0);
  const late = timely.filter((o) => o.answered! - o.sent > DEADLINE_MS + 1000);
  counts["answers later than the deadline"] = late.length;
  if (late.length > 0) {
    failures.push(`${late.length} writes answered more than 1 s after the write deadline`);
  }
  return { name: "cluster nemesis", counts, failures };
}

/** The machine's 1-minute load average, when the system tells it. */
function loadAverage(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ")[0];
  } catch {
    return undefined;
  }
}

/** A node's log lines between `from` and `to` (ms) that say its thread was held or slow. */
function around(output: string, from: number, to: number): string[] {
  const lines: string[] = [];
  for (const line of output.split("\n")) {
    if (!/held|slow/.test(line)) continue;
    const at = Date.parse(line.slice(0, 24));
    if (at >= from && at <= to) {
      lines.push(line.slice(11, 23) + line.slice(24).replace(/\s+/g, " "));
    }
  }
  return lines.slice(0, 4);
}

/** Seconds, one decimal. */
const secs = (ms: number) => (ms / 1000).toFixed(1);

/** Fills in JetStream's own stall for `report` (the probes on the servers that stayed up, in
 * the same window) and the fault's bound: JetStream's own plus 2 s for a fault of the stream's
 * leader, else 5 s or, when JetStream itself stalled longer, its own plus 2 s. */
function judge(
  report: FaultReport,
  fault: Fault,
  probe: JetStreamProbes,
  t0: number,
  t1: number,
): void {
  const hit = fault.node === undefined ? fault.target!() : -1;
  const up = [0, 1, 2].filter((s) => s !== hit);
  report.jsStallMs = probe.stall(t0, t1, up);
  report.jsPerServer = [0, 1, 2].map((s) => probe.stall(t0, t1, [s]));
  report.boundMs = fault.leader ? report.jsStallMs + 2000 : Math.max(5000, report.jsStallMs + 2000);
  report.jsErrors = probe.errors(t0, t1).map((e) =>
    `n${e.server + 1} ${e.error} x${e.count} (+${secs(e.first - t0)}..+${secs(e.last - t0)} s)`
  );
}

/** The longest time without an ack on each node that stayed up, between `t0` and `t1`, and the
 * readiness probes of that window. */
function measure(
  fault: Fault,
  t0: number,
  t1: number,
  acks: number[][],
  probes: Probe[],
  diverged: Set<number>,
): FaultReport {
  let stall = 0;
  const perNode: (number | null)[] = [];
  for (const [node, times] of acks.entries()) {
    if (node === fault.node || diverged.has(node)) {
      perNode.push(null);
      continue;
    }
    const before = stall;
    stall = 0;
    let last = t0;
    for (const t of times) {
      if (t <= t0) continue;
      if (t > t1) break;
      stall = Math.max(stall, t - last);
      last = t;
    }
    stall = Math.max(stall, Math.min(t1, times.find((t) => t > last) ?? t1) - last);
    perNode.push(stall);
    stall = Math.max(before, stall);
  }

  const window = probes.filter((p) =>
    p.at >= t0 && p.at <= t1 && p.node !== fault.node && !diverged.has(p.node)
  );
  return {
    name: fault.name,
    at: t0,
    stallMs: stall,
    perNode,
    rawStallMs: 0,
    jsStallMs: 0,
    jsPerServer: [],
    boundMs: 0,
    jsErrors: [],
    readyzMaxMs: Math.max(0, ...window.map((p) => p.ms)),
    controlMaxMs: 0,
    readyzSlowest: window.reduce<typeof window[number] | undefined>(
      (a, p) => (!a || p.ms > a.ms ? p : a),
      undefined,
    ),
    readyz503: window.filter((p) => p.status === 503).length,
    readyzReasons: [
      ...new Set(window.flatMap((p) => (p.reason ? [p.reason.replace(/\d+/g, "N")] : []))),
    ],
  };
}

/** Waits for every node to hold the same state of every object, then checks it against the
 * writes (see the module comment). A node still behind after a minute fails the run, unless
 * JetStream itself is out of service then (`jetStreamOut`: it cannot catch up): its state must
 * then be an earlier state of the same history (a list a prefix of the most advanced node's),
 * and the checks run on the most advanced state. */
async function verify(
  nodes: TestServer[],
  ops: Op[],
  failures: string[],
  jetStreamOut: () => boolean,
  counts: Record<string, number>,
): Promise<void> {
  const keys = [...Array(LISTS).keys()].map((i) => `list${i}`).concat(
    [...Array(COUNTERS).keys()].map((i) => `count${i}`),
  );
  const read = async (node: TestServer, key: string) => {
    const res = await fetch(`${node.baseUrl}/api/v1/objects/app-1/nemesis/${key}`, {
      headers: node.headers(),
      signal: AbortSignal.timeout(10_000),
    });
    return await res.json() as { state: { l?: string[]; n?: number }; log_id: number };
  };
  for (const key of keys) {
    let states: { state: { l?: string[]; n?: number }; log_id: number }[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      states = await Promise.all(
        nodes.map((n) => read(n, key).catch(() => ({ state: {}, log_id: -1 }))),
      );
      if (states.every((s) => JSON.stringify(s) === JSON.stringify(states[0]))) break;
      await sleep(250);
    }
    const ahead = states.reduce((a, s) => (s.log_id > a.log_id ? s : a), states[0]);
    if (!states.every((s) => JSON.stringify(s) === JSON.stringify(states[0]))) {
      const differ = `${key}: nodes differ: ${states.map((s) => `log_id ${s.log_id}`).join(", ")}`;
      const earlier = states.every((s) =>
        s.log_id >= 0 && s.log_id <= ahead.log_id &&
        (key.startsWith("list")
          ? JSON.stringify(s.state.l ?? []) ===
            JSON.stringify((ahead.state.l ?? []).slice(0, s.log_id))
          : (s.state.n ?? 0) <= (ahead.state.n ?? 0))
      );
      if (!earlier || !jetStreamOut()) {
        failures.push(differ);
        // Which nodes answer without an acknowledged write (the one thing that must never
        // happen), whether or not they serve.
        const acked = ops.filter((o) => o.key === key && o.status === 200);
        for (const [i, s] of states.entries()) {
          if (s.log_id < 0) continue;
          const list = s.state.l ?? [];
          const lacking = key.startsWith("list")
            ? acked.filter((o) => list[o.logId! - 1] !== o.value)
            : (s.state.n ?? 0) < acked.length
            ? acked
            : [];
          if (lacking.length === 0) continue;
          const o = lacking[0];
          failures.push(
            `${key}: node ${
              i + 1
            } (log_id ${s.log_id}) lacks ${lacking.length} acknowledged writes` +
              (key.startsWith("list")
                ? ` (e.g. ${o.value} at log_id ${o.logId})`
                : ` (counter ${s.state.n ?? 0}, ${acked.length} acknowledged)`),
          );
        }
        continue;
      }
      console.log(
        `    ${differ}: behind on the same history while JetStream is out of service (JetStream's, not a divergence)`,
      );
      counts["objects behind while JetStream was out"] =
        (counts["objects behind while JetStream was out"] ?? 0) + 1;
    }
    const { state, log_id } = ahead;
    const mine = ops.filter((o) => o.key === key);
    const acked = mine.filter((o) => o.status === 200);
    if (key.startsWith("list")) {
      const list = state.l ?? [];
      if (list.length !== log_id) {
        failures.push(`${key}: ${list.length} entries at log_id ${log_id} (not contiguous)`);
      }
      if (new Set(list).size !== list.length) failures.push(`${key}: a value stored twice`);
      const sent = new Set(mine.map((o) => o.value));
      for (const v of list) if (!sent.has(v)) failures.push(`${key}: ${v} was never written`);
      for (const o of acked) {
        if (list[o.logId! - 1] !== o.value) {
          failures.push(`${key}: acknowledged ${o.value} not at log_id ${o.logId}`);
        }
      }
    } else {
      const n = state.n ?? 0;
      const attempted = mine.filter((o) => o.status !== 200).length;
      if (n !== log_id) failures.push(`${key}: counter ${n} at log_id ${log_id}`);
      if (n < acked.length || n > acked.length + attempted) {
        failures.push(`${key}: counter ${n}, ${acked.length} acknowledged, ${attempted} unknown`);
      }
    }
    // Real-time order: a write sent after another was acknowledged has a later position.
    const byAck = [...acked].sort((a, b) => a.answered! - b.answered!);
    const bySent = [...acked].sort((a, b) => a.sent - b.sent);
    let i = 0;
    let highest = 0;
    for (const b of bySent) {
      while (i < byAck.length && byAck[i].answered! < b.sent) {
        highest = Math.max(highest, byAck[i++].logId!);
      }
      if (b.logId! <= highest) {
        failures.push(
          `${key}: ${b.value} (log_id ${b.logId}) sent after log_id ${highest} was acknowledged`,
        );
      }
    }
  }
}
