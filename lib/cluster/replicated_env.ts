/**
 * The clustered store: one node's LMDB environment and transaction API, with every write
 * ordered through one replicated JetStream log, so every node's LMDB holds the same data. A
 * facade over its parts around one shared state (`replica/state.ts`): the write path
 * (`replica/propose.ts`), the apply of the log (`replica/apply.ts`), and the defence against a
 * diverged NATS replica (`divergence/mod.ts`: the nodes' agreement, stopping and rebuilding a
 * node on another history). Node-local databases (`nodeLocal`) are
 * applied only by the node that wrote them; a transaction writing only those commits locally.
 */
import type { RootDatabase } from "lmdb";
import { DirectCommits } from "../store/direct_commits.ts";
import type { Commits, RemoteChanges, Storage } from "../store/storage.ts";
import type { Table } from "../store/table.ts";
import type { ClusterLink } from "./link.ts";
import { type Claim, Divergence } from "./divergence/mod.ts";
import { ReplicatedTable } from "./replicated_table.ts";
import { BEHIND, decodeSeq, HEAD_SUBJECT } from "./replica/state.ts";
import { NODE_LOCAL_DB, ReplicaState, UNLISTED_NODE_LOCAL } from "./replica/state.ts";
import type { LogAccess, ReplicationOptions } from "./replica/state.ts";
import { Applier } from "./replica/apply.ts";
import { Proposer } from "./replica/propose.ts";

export { UNSURE_MS } from "./divergence/mod.ts";
export { NODE_LOCAL_DB, POSITION_DB, UNLISTED_NODE_LOCAL } from "./replica/state.ts";

/** See the module comment. */
export class ReplicatedEnv implements Storage {
  /** Each transaction on its own (`DirectCommits`). */
  readonly commits: Commits = new DirectCommits(this);
  #s: ReplicaState;
  #apply: Applier;
  #propose: Proposer;
  #defence: Divergence;
  #tables = new Map<string, ReplicatedTable>();
  #unsubscribe: (() => void)[] = [];
  #tailTimer: ReturnType<typeof setInterval> | undefined;

  /** The store at `path`, replicated through `link`, reading the log through `log` (the link
   * but for a test's fault wrapper, `lib/faults/`). */
  constructor(path: string, link: ClusterLink, opts: ReplicationOptions, log: LogAccess = link) {
    const s = this.#s = new ReplicaState(path, link, log, opts);
    this.#apply = new Applier(s);
    this.#propose = new Proposer(s, this.#apply);
    this.#defence = this.#apply.defence = new Divergence(s, this.#apply, {
      db: (name) => this.db(name),
      transaction: (fn) => this.transaction(fn),
      nodeLocal: (name) => void this.nodeLocal(name),
    });
  }

  /** What this node's heartbeats claim a majority confirmed. */
  claim(): Claim | undefined {
    return this.#defence.claim();
  }

  /** Another node's heartbeat claims `claim`. */
  hearClaim(node: string, claim: Claim): void {
    this.#defence.hearClaim(node, claim);
  }

  /** Whether this node stopped itself and has not yet rebuilt its store and been confirmed
   * (no writes, no snapshots, no read-your-writes answers meanwhile). */
  get stopped(): boolean {
    return this.#s.stopped;
  }

  /** Resolves true once a majority of the nodes confirmed this node's history up to `seq`,
   * false after `ms` or when this node stopped itself. */
  async confirmed(seq: number, ms: number): Promise<boolean> {
    return !this.stopped && (await this.#defence.confirm(seq, Date.now() + ms)) && !this.stopped;
  }

  /** Registers `fn`, called each time this node replaced its store, before anything of the new
   * one is applied: what it told clients from the old one is void. */
  onRebuilt(fn: () => void): void {
    this.#defence.onRebuilt(fn);
  }

  /** Log position applied here. */
  get applied(): number {
    return this.#s.applied;
  }

  /** What readiness needs to know, without asking anyone. */
  status(): {
    connected: boolean;
    appendAgeMs: number;
    applyAgeMs: number;
    lag: number;
    failing?: string;
  } {
    const s = this.#s;
    const now = Date.now();
    return {
      connected: s.link.connected(),
      appendAgeMs: now - s.lastAppend,
      applyAgeMs: now - s.lastApply,
      lag: Math.max(0, s.knownTail - s.applied),
      failing: s.failing,
    };
  }

  /** The write deadline in ms (a read waiting for a position waits at most this long). */
  get writeDeadlineMs(): number {
    return this.#s.opts.writeDeadlineMs;
  }

  /** Resolves true once log position `seq` is applied here, false after `ms`; never true while
   * this node stopped itself or rebuilds (its store may hold another history). */
  async caughtUp(seq: number, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (!this.stopped && this.#s.applied >= seq) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      if (this.stopped) await new Promise((r) => setTimeout(r, Math.min(left, 100)));
      else await this.#apply.waitApplied(seq, Math.min(deadline, Date.now() + 250));
    }
  }

  /** Follows the log; resolves once everything the log held then is applied (rejects after
   * `waitMs`). A store marked diverged is rebuilt first. */
  async start(waitMs = 60_000): Promise<void> {
    const s = this.#s;
    const refused = await this.#defence.start();
    if (!refused) this.#apply.follow();
    // A lost last message shows no gap: writers announce their positions, and the tail is
    // compared now and then.
    this.#unsubscribe.push(s.log.subscribe(HEAD_SUBJECT, (data) => {
      const seq = decodeSeq(data);
      if (seq > 0) this.#apply.hint(seq);
    }));
    this.#tailTimer = setInterval(() => void this.#apply.checkTail(), 1000);
    if (refused) return;
    const { first, last: target } = await s.link.bounds();
    if (first > s.applied + 1) throw new Error(BEHIND);
    if (!(await this.#apply.waitApplied(target, Date.now() + waitMs))) {
      throw new Error(`cluster catch-up to log position ${target} did not finish in ${waitMs} ms`);
    }
    this.#defence.caughtUp();
  }

  /** The table as products see it, recording the running job's reads and writes. */
  db<V = unknown>(name: string): Table<V> {
    if (!this.#tables.has(name)) {
      this.#tables.set(name, new ReplicatedTable(name, this.#s.rawDb(name), this.#s));
    }
    return this.#tables.get(name) as ReplicatedTable<V>;
  }

  /** Declares `name` node-local (`Storage.nodeLocal`), recorded for snapshots; opens it. */
  nodeLocal<V = unknown>(name: string): Table<V> {
    const s = this.#s;
    if (!s.localDbs.has(name)) {
      s.localDbs.add(name);
      // Restored from a snapshot without the list: the rows there are another node's.
      if (s.positions.get(UNLISTED_NODE_LOCAL)) s.rawDb(name).clearSync();
      s.rawDb<true>(NODE_LOCAL_DB).putSync(name, true);
    }
    return this.db<V>(name);
  }

  /** Where the cluster's members come from (acknowledgements wait for a majority of them). */
  useMembers(members: () => string[]): void {
    this.#defence.useMembers(members);
  }

  /** Other nodes' changes to the ordered logs, told as this node applies them. */
  get remote(): RemoteChanges {
    return this.#s.changes;
  }

  /** The LMDB environment's root (speculation and apply run their transactions on it). */
  get root(): RootDatabase {
    return this.#s.local.root;
  }

  /** Readiness, from what this node knows: connected, no write or known position waiting
   * longer than the deadline, no failing apply or compaction. */
  unavailable(): string | undefined {
    const s = this.#s;
    if (s.closed) return "storage unavailable: server shutting down";
    if (s.diverged) return s.diverged;
    if (s.rebuilding) return s.rebuilding;
    if (!s.link.connected()) return "cluster unavailable: not connected to NATS";
    if (s.failing) return s.failing;
    const { appendAgeMs, applyAgeMs, lag } = this.status();
    const deadline = s.opts.writeDeadlineMs;
    if (s.inflight.size > 0 && appendAgeMs > deadline) {
      return `cluster unavailable: no write reached the log for ${appendAgeMs} ms`;
    }
    if (lag > 0 && applyAgeMs > deadline) {
      return `cluster unavailable: ${lag} log positions behind, nothing applied for ${applyAgeMs} ms`;
    }
    return undefined;
  }

  /** Resolves with `fn`'s result once its writes are applied here and a majority of the nodes
   * agreed that far (`replica/propose.ts`). */
  transaction<T>(fn: () => T): Promise<T> {
    return this.#propose.transaction(fn);
  }

  /** Shutdown, step one (see `StoreEnv.drain`). */
  drain(): Promise<void> {
    return this.#s.local.drain();
  }

  /** Resolves once every write issued so far is on disk. */
  flushed(): Promise<void> {
    return this.#s.local.flushed();
  }

  /** Writes a consistent copy of the store to `path` (a snapshot, `snapshots.ts`). */
  backup(path: string): Promise<void> {
    return this.#s.local.backup(path);
  }

  /** Stops following the log once the writes out have settled, then closes the store. */
  async close(): Promise<void> {
    const s = this.#s;
    s.closed = true;
    this.#propose.close();
    this.#defence.close();
    while (s.inflight.size > 0 || s.applying || s.replacing) {
      await new Promise((r) => setTimeout(r, 5));
    }
    this.#apply.halt(true);
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    clearInterval(this.#tailTimer);
    await s.local.close();
  }
}
