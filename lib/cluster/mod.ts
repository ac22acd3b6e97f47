/**
 * Clustered mode (`--nats`): several nodes share one NATS JetStream cluster. Writes are ordered
 * through one replicated log and applied by every node (`ReplicatedEnv`), so any node serves
 * every call and join; events kept in no log travel on core NATS (`startBus`); node liveness
 * (`NodeWatch`), presence (`startPresence`) and channel occupancy (`startOccupancy`) are shared
 * with heartbeats; snapshots bound the log (`snapshots.ts`). docs/cluster.md has the
 * set-up, docs/cluster-internals.md the mechanism.
 */
import process from "node:process";
import type { Hub } from "../hub/hub.ts";
import type { ProductModule } from "../product.ts";
import { log } from "../log/mod.ts";
import { startBus } from "./bus.ts";
import { startLagSampler } from "./lag.ts";
import { ClusterLink } from "./link.ts";
import { NodeWatch, ownerOf } from "./nodes.ts";
import { startOccupancy } from "./occupancy.ts";
import { startPresence } from "./presence.ts";
import { restoreIfBehind, startSnapshots } from "./snapshots.ts";
import { ReplicatedEnv, UNSURE_MS } from "./replicated_env.ts";
import { APPLIED_SUBJECT, HEAD_SUBJECT } from "./replica/state.ts";

export { ClusterLink } from "./link.ts";
export { ReplicatedEnv } from "./replicated_env.ts";

/** Tunables read from the environment (tests shorten them). */
function tunable(name: string, fallback: number): number {
  const raw = Number(process.env[name]);
  return Number.isFinite(raw) && raw >= 0 && process.env[name] !== "" &&
      process.env[name] !== undefined
    ? raw
    : fallback;
}

/** A node's cluster parts, opened before the products and started after them. */
export interface ClusterNode {
  link: ClusterLink;
  env: ReplicatedEnv;
  /** Catches up with the log, then relays events and shares liveness, the modules' presence
   * and occupancy. */
  start(hub: Hub, modules: ProductModule[]): Promise<void>;
  /** Says goodbye to the other nodes and closes the connection (after the store is closed). */
  stop(): Promise<void>;
}

/** Connects to NATS and opens the replicated store at `storePath`. */
export async function openCluster(
  urls: string,
  nodeId: string,
  storePath: string,
): Promise<ClusterNode> {
  const link = await ClusterLink.open(urls.split(",").map((u) => u.trim()).filter(Boolean), nodeId);
  await restoreIfBehind(link, storePath).catch(async (err) => {
    await link.close();
    throw err;
  });
  const opts = {
    writeDeadlineMs: tunable("SWITCHBOARD_CLUSTER_WRITE_DEADLINE_MS", 10_000),
    rebuildPauseMs: tunable("SWITCHBOARD_CLUSTER_REBUILD_PAUSE_MS", 1000),
    unsureMs: tunable("SWITCHBOARD_CLUSTER_UNSURE_MS", UNSURE_MS),
  };
  const faults = {
    dropRate: tunable("SWITCHBOARD_FAULT_DROP_LOG_DELIVERY", 0),
    forkAt: tunable("SWITCHBOARD_FAULT_FORK_AT", 0),
    otherAt: tunable("SWITCHBOARD_FAULT_OTHER_AT", 0),
    deafAfter: tunable("SWITCHBOARD_FAULT_DEAF_AFTER", 0),
    headSubject: HEAD_SUBJECT,
    appliedSubject: APPLIED_SUBJECT,
  };
  let env: ReplicatedEnv;
  // Test-time faults (`lib/faults/`): the store reads the log through a wrapper playing them.
  if (faults.dropRate > 0 || faults.forkAt > 0 || faults.otherAt > 0 || faults.deafAfter > 0) {
    const { FaultyLog } = await import("../faults/faulty_log.ts");
    const faulty = new FaultyLog(link, faults);
    env = new ReplicatedEnv(storePath, link, opts, faulty);
    faulty.watch(env);
  } else env = new ReplicatedEnv(storePath, link, opts);
  const stops: (() => void)[] = [];
  return {
    link,
    env,
    async start(hub, modules) {
      await env.start();
      // A store marked diverged whose rebuild was refused serves stopped (503): it caught up
      // with nothing (`ReplicatedEnv.start`).
      if (env.stopped) {
        log.warn(
          "cluster node serving stopped: its store was not rebuilt (see the reason above); it tries again later",
          { position: env.applied },
        );
      } else log.info("cluster log caught up", { position: env.applied });
      stops.push(startBus(link, hub));
      stops.push(startLagSampler());
      const heartbeatMs = tunable("SWITCHBOARD_PRESENCE_HEARTBEAT_MS", 1000);
      const nodes = new NodeWatch(
        link,
        { heartbeatMs, timeoutMs: heartbeatMs * 3.5 },
        () => ({ applied: env.applied, stopped: env.stopped, claim: env.claim() }),
        (node, claim) => env.hearClaim(node, claim),
      );
      env.useMembers(() => nodes.members());
      // Stopped last (stops run in order): the goodbye follows the final presence and counts.
      hub.useOwner((topic) => nodes.owns(topic.key));
      for (const m of modules) {
        if (m.presence) stops.push(startPresence(link, m.presence, nodes, heartbeatMs));
        if (m.occupancy) stops.push(startOccupancy(link, m.occupancy, nodes, heartbeatMs));
      }
      // After presence and occupancy dropped the gone node's part: its topics' new owners.
      nodes.onGone((node) =>
        hub.ownerGone((topic) => ownerOf(topic.key, [...nodes.live(), node]) === node)
      );
      const every = tunable("SWITCHBOARD_CLUSTER_SNAPSHOT_EVERY", 100_000);
      const hearAsks = tunable("SWITCHBOARD_FAULT_IGNORE_SNAPSHOT_ASKS", 0) === 0;
      stops.push(startSnapshots(link, env, nodes, { every, checkMs: heartbeatMs, hearAsks }));
      stops.push(() => nodes.stop());
    },
    async stop() {
      for (const stop of stops.splice(0)) stop();
      await link.close();
    },
  };
}
