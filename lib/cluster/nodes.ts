/**
 * Which nodes are alive, the log position each has applied (compaction never purges past
 * the lowest) and whether each stopped itself (`ReplicatedEnv.stopped`: it serves 503 until it
 * rebuilds), from heartbeats on core NATS (`sb.nodes`): a node silent for
 * `timeoutMs` (crashed, cut off) is gone, one that stops cleanly says so at once. Each topic has
 * one owner among the live nodes (rendezvous hashing), the node that reports its cluster-wide
 * changes (webhooks), so they are sent once, not once per node.
 */
import { Packr } from "msgpackr";
import type { Claim } from "./divergence/mod.ts";
import type { ClusterLink } from "./link.ts";

/** The core NATS subject of the nodes' heartbeats. */
export const NODES_SUBJECT = "sb.nodes";
const SUBJECT = NODES_SUBJECT;
const codec = new Packr({ useRecords: false });

/** `a`: the sender's applied log position; `s`: set while the sender stopped itself (absent
 * from a node of an earlier version: serving); `c`: the position it knows a majority confirmed
 * and its chained digest there (`divergence/history.ts`; absent when it knows none, or from an earlier
 * version). */
type Message = { n: string; k: "hello" | "alive" | "bye"; a: number; s?: 1; c?: [number, string] };

/** The node that sent heartbeat `data` (throws on bytes that are not a heartbeat). */
export function heartbeatSender(data: Uint8Array): string {
  return String((codec.unpack(data) as Message).n);
}

/** What this node's heartbeats tell about it. */
export interface NodeState {
  /** The log position it applied. */
  applied: number;
  /** Whether it stopped itself (`ReplicatedEnv.stopped`). */
  stopped: boolean;
  /** What it knows a majority confirmed (`divergence/history.ts`), if anything. */
  claim?: Claim;
}

/** Heartbeat and node timeout. */
export interface NodeTiming {
  heartbeatMs: number;
  timeoutMs: number;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The owner of `topic` among `nodes` (the highest hash of node and topic wins). */
export function ownerOf(topic: string, nodes: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const node of nodes) {
    const score = hash(`${node}\n${topic}`);
    if (score > bestScore || (score === bestScore && node < best!)) {
      [best, bestScore] = [node, score];
    }
  }
  return best;
}

/** See the module comment. */
export class NodeWatch {
  readonly me: string;
  #link: ClusterLink;
  /** Other live nodes: when last heard, the log position each last reported, and whether it
   * last said it stopped itself. */
  #seen = new Map<string, { at: number; applied: number; stopped: boolean }>();
  /** Every node heard from that has not said goodbye, live now or not. */
  #members = new Set<string>();
  #state: () => NodeState;
  #hearClaim: (node: string, claim: Claim) => void;
  #gone: ((node: string) => void)[] = [];
  #beat: ReturnType<typeof setInterval>;
  #unsubscribe: () => void;

  /** Starts sending heartbeats (with this node's `state`) and watching the other nodes',
   * handing each claim they carry to `hearClaim`. */
  constructor(
    link: ClusterLink,
    timing: NodeTiming,
    state: () => NodeState,
    hearClaim: (node: string, claim: Claim) => void,
  ) {
    this.me = link.nodeId;
    this.#link = link;
    this.#state = state;
    this.#hearClaim = hearClaim;
    this.#unsubscribe = link.subscribe(SUBJECT, (data) => {
      const m = codec.unpack(data) as Message;
      if (m.n === this.me) return;
      if (m.k === "bye") {
        this.#members.delete(m.n);
        return this.#forget(m.n);
      }
      this.heard(m.n);
      Object.assign(this.#seen.get(m.n)!, { applied: m.a, stopped: m.s === 1 });
      if (Array.isArray(m.c)) this.#hearClaim(m.n, { at: Number(m.c[0]), chain: String(m.c[1]) });
      if (m.k === "hello") this.#send("alive");
    });
    this.#beat = setInterval(() => {
      this.#send("alive");
      const cutoff = Date.now() - timing.timeoutMs;
      for (const [node, { at }] of this.#seen) if (at < cutoff) this.#forget(node);
    }, timing.heartbeatMs);
    this.#send("hello");
  }

  /** Any message from `node` shows it alive (a late one after its goodbye too: it is then
   * gone again after the timeout, taking what the message added with it). */
  heard(node: string): void {
    if (node === this.me) return;
    this.#members.add(node);
    const seen = this.#seen.get(node);
    if (seen) seen.at = Date.now();
    else this.#seen.set(node, { at: Date.now(), applied: 0, stopped: false });
  }

  /** Calls `fn` when a node is gone (after it left the live set). */
  onGone(fn: (node: string) => void): void {
    this.#gone.push(fn);
  }

  /** The cluster's members as far as this node knows, this one included: every node heard
   * from that has not said goodbye, whether it is alive now or not (a killed or cut-off node
   * still counts, so a majority of them is a majority of the cluster). */
  members(): string[] {
    return [this.me, ...this.#members];
  }

  /** The live nodes, this one included. */
  live(): string[] {
    return [this.me, ...this.#seen.keys()];
  }

  /** The live nodes that serve, this one included unless it stopped itself: those whose last
   * heartbeat did not say they stopped themselves (a stopped node applies nothing until it
   * rebuilds, so work that needs the log applied, such as snapshots, goes to the others). */
  serving(): string[] {
    const others = [...this.#seen].filter(([, seen]) => !seen.stopped).map(([node]) => node);
    return this.#state().stopped ? others : [this.me, ...others];
  }

  /** The lowest log position applied by a live node (0 for one not heard from yet). */
  lowestApplied(): number {
    let low = this.#state().applied;
    for (const { applied } of this.#seen.values()) low = Math.min(low, applied);
    return low;
  }

  /** Whether this node owns `topic` (see the module comment). */
  owns(topic: string): boolean {
    return ownerOf(topic, this.live()) === this.me;
  }

  /** Says goodbye and stops. */
  stop(): void {
    clearInterval(this.#beat);
    this.#send("bye");
    this.#unsubscribe();
  }

  #send(k: Message["k"]): void {
    const { applied, stopped, claim } = this.#state();
    const message: Message = {
      n: this.me,
      k,
      a: applied,
      ...(stopped ? { s: 1 } : {}),
      ...(claim ? { c: [claim.at, claim.chain] } : {}),
    };
    this.#link.publish(SUBJECT, codec.pack(message));
  }

  #forget(node: string): void {
    if (!this.#seen.delete(node)) return;
    for (const fn of this.#gone) fn(node);
  }
}
