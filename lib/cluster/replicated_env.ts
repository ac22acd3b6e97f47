/**
 * The clustered store: the same LMDB environment and transaction API as one node, with every
 * write ordered through one replicated JetStream log, so every node's LMDB holds the same
 * data after the same sequence of writes.
 *
 * A write transaction runs speculatively: inside an LMDB write transaction that is aborted
 * afterwards, recording each `put`/`remove` it makes (its write set) against the local state
 * at log position `base`. The write set is appended to the log only if the log is still at
 * `base` (compare-and-set), else the node catches up and runs it again. Every node, the
 * writer included, then applies write sets strictly in log order, each in one local commit,
 * and the writer's transaction resolves once its own write set is applied: acknowledged after
 * the JetStream ack (replicated) and the local commit. Products keep their code: their
 * transactions are re-run on conflict, so they must be plain functions of the stored state,
 * which they already are (one node re-runs nothing but reads the same way).
 *
 * Node-local databases (webhook outboxes, the system table) are recorded too but applied only
 * by the node that wrote them; a transaction that writes only those commits locally.
 */
import type { Database, Key } from "lmdb";
import { Packr } from "msgpackr";
import { asStorageError, StorageUnavailableError } from "../store/errors.ts";
import { type RemoteApplyHook, StoreEnv, type Write } from "../store/env.ts";
import { log } from "../log/mod.ts";
import type { ClusterLink } from "./link.ts";

/** Databases applied only on the node that wrote them. */
const LOCAL_DBS = new Set(["system", "chat:outbox", "pusher:outbox", "cluster:state"]);

/** Write sets per log message, at most (more transactions wait for the next message). */
const MAX_BATCH = 256;
/** Log messages applied per local commit, at most. */
const MAX_APPLY = 512;

const codec = new Packr({ useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0]);

/** One log message: the writing node, its batch id and the write set. */
interface LogMessage {
  o: string;
  b: string;
  w: Write[];
}

interface Task {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
  writes?: Write[];
}

const ABORT = Symbol("speculation done");
/** Core NATS subject on which writers hand each stored message to the other nodes. */
const TAIL_SUBJECT = "sb.tail";

/** `data` prefixed with its log position (8 bytes, big-endian). */
function withSeq(seq: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + data.byteLength);
  new DataView(out.buffer).setFloat64(0, seq);
  out.set(data, 8);
  return out;
}

/** The inverse of `withSeq`. */
function splitSeq(framed: Uint8Array): [number, Uint8Array] {
  return [new DataView(framed.buffer, framed.byteOffset).getFloat64(0), framed.subarray(8)];
}

/** Tunables, mostly for tests. */
export interface ReplicationOptions {
  /** A write not applied within this many ms fails with 503 (its outcome is then unknown). */
  writeDeadlineMs: number;
  /** Probability with which a message from the log consumer is dropped (a fault hook for
   * tests: the node must repair the gap from the stream). */
  dropRate: number;
}

/** See the module comment. */
export class ReplicatedEnv extends StoreEnv {
  #link: ClusterLink;
  #opts: ReplicationOptions;
  #raw = new Map<string, Database>();
  #wrapped = new Map<string, Database>();
  #state: Database<number, Key>;
  #recording: Write[] | null = null;
  #hooks: RemoteApplyHook[] = [];
  #queue: Task[] = [];
  #pumping = false;
  /** Batches written here and not yet applied: id -> applied flag. */
  #awaiting = new Map<string, { applied: boolean }>();
  #applied: number;
  #buffer = new Map<number, Uint8Array>();
  #applying: Promise<void> | undefined;
  #appliedWaiters: { seq: number; wake: () => void }[] = [];
  #repairTimer: ReturnType<typeof setTimeout> | undefined;
  #lastDelivery = 0;
  /** Highest position known to exist that repair should reach. */
  #repairTarget = 0;
  #tailTimer: ReturnType<typeof setInterval> | undefined;
  #consumer: { stop(): void } | undefined;
  #unsubscribeTail: (() => void) | undefined;
  #failing: string | undefined;
  #closed = false;

  constructor(path: string, link: ClusterLink, opts: ReplicationOptions) {
    // The log (a JetStream quorum) is the durable copy; the local commit need not wait for the
    // disk: a node that crashes resumes from the position its last commit recorded.
    super(path, false);
    this.#link = link;
    this.#opts = opts;
    this.#state = this.#rawDb<number>("cluster:state");
    this.#applied = this.#state.get("applied") ?? 0;
  }

  /** Log position applied here. */
  get applied(): number {
    return this.#applied;
  }

  /**
   * Starts following the log and resolves once this node has applied everything the log held
   * when it was called (or rejects after `waitMs`).
   */
  async start(waitMs = 60_000): Promise<void> {
    this.#consumer = this.#link.follow(this.#applied + 1, (seq, data) => {
      this.#lastDelivery = Date.now();
      if (this.#opts.dropRate > 0 && Math.random() < this.#opts.dropRate) return;
      this.#feed(seq, data);
    });
    // A dropped or delayed last message shows no gap: writers announce each new position, and
    // the log's tail is compared now and then in case an announcement was lost too.
    this.#unsubscribeTail = this.#link.subscribe(TAIL_SUBJECT, (framed) => {
      const [seq, data] = splitSeq(framed);
      if (this.#opts.dropRate > 0 && Math.random() < this.#opts.dropRate) return this.#scheduleRepair(seq);
      this.#feed(seq, data);
    });
    this.#tailTimer = setInterval(() => void this.#checkTail(), 1000);
    const target = await this.#link.lastSeq();
    if (!(await this.#waitApplied(target, Date.now() + waitMs))) {
      throw new Error(`cluster catch-up to log position ${target} did not finish in ${waitMs} ms`);
    }
  }

  override db<V = unknown>(name: string): Database<V, Key> {
    let db = this.#wrapped.get(name);
    if (!db) {
      db = this.#recorder(name, this.#rawDb(name));
      this.#wrapped.set(name, db);
    }
    return db as Database<V, Key>;
  }

  override onRemoteApply(hook: RemoteApplyHook): void {
    this.#hooks.push(hook);
  }

  override unavailable(): string | undefined {
    if (!this.#link.connected()) return "cluster unavailable: not connected to NATS";
    return this.#failing;
  }

  /** See the module comment: resolves with `fn`'s result once its writes are applied here. */
  override transaction<T>(fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StorageUnavailableError("server shutting down"));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      void this.#pump();
    });
  }

  override async close(): Promise<void> {
    this.#closed = true;
    while (this.#pumping || this.#applying) await new Promise((r) => setTimeout(r, 5));
    this.#consumer?.stop();
    this.#unsubscribeTail?.();
    clearInterval(this.#tailTimer);
    clearTimeout(this.#repairTimer);
    await super.close();
  }

  #rawDb<V>(name: string): Database<V, Key> {
    let db = this.#raw.get(name);
    if (!db) {
      db = super.db(name);
      this.#raw.set(name, db);
    }
    return db as Database<V, Key>;
  }

  /** The database as products see it: writes inside a transaction are recorded. */
  #recorder(name: string, raw: Database): Database {
    const bound = new Map<PropertyKey, unknown>();
    const put = (key: Key, value: unknown) => {
      this.#recording?.push([0, name, key, value]);
      return raw.put(key, value);
    };
    const remove = (key: Key) => {
      this.#recording?.push([1, name, key]);
      return raw.remove(key);
    };
    return new Proxy(raw, {
      get(target, prop) {
        if (prop === "put") return put;
        if (prop === "remove") return remove;
        const v = Reflect.get(target, prop, target);
        if (typeof v !== "function") return v;
        let b = bound.get(prop);
        if (!b) bound.set(prop, (b = v.bind(target)));
        return b;
      },
    });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#queue.length > 0) await this.#commit(this.#queue.splice(0, MAX_BATCH));
    } finally {
      this.#pumping = false;
    }
  }

  /** Runs `tasks` speculatively; drops (rejects) a task that throws and runs the rest again. */
  #speculate(tasks: Task[]): { base: number; tasks: Task[] } {
    for (;;) {
      let failed: { task: Task; error: unknown } | undefined;
      let base = 0;
      try {
        this.root.transactionSync(() => {
          base = this.#state.get("applied") ?? 0;
          for (const task of tasks) {
            this.#recording = [];
            try {
              task.result = task.fn();
            } catch (error) {
              failed = { task, error };
              throw ABORT;
            }
            task.writes = this.#recording;
          }
          throw ABORT;
        });
      } catch (err) {
        if (err !== ABORT) throw err;
      } finally {
        this.#recording = null;
      }
      if (!failed) return { base, tasks };
      failed.task.reject(failed.error);
      tasks = tasks.filter((t) => t !== failed!.task);
    }
  }

  async #commit(tasks: Task[]): Promise<void> {
    const deadline = Date.now() + this.#opts.writeDeadlineMs;
    for (;;) {
      if (this.#applying) await this.#applying;
      let spec: { base: number; tasks: Task[] };
      try {
        spec = this.#speculate(tasks);
      } catch (err) {
        for (const t of tasks) t.reject(err);
        return;
      }
      tasks = spec.tasks;
      if (tasks.length === 0) return;
      const writes = tasks.flatMap((t) => t.writes!);
      if (writes.every((w) => LOCAL_DBS.has(w[1]))) {
        try {
          await super.transaction(() => this.#write(writes, true));
          for (const t of tasks) t.resolve(t.result);
        } catch (err) {
          for (const t of tasks) t.reject(err);
        }
        return;
      }
      const batch = crypto.randomUUID();
      const data = codec.pack({ o: this.#link.nodeId, b: batch, w: writes } satisfies LogMessage);
      if (data.byteLength > this.#link.nc.info!.max_payload && tasks.length > 1) {
        const half = Math.ceil(tasks.length / 2);
        await this.#commit(tasks.slice(0, half));
        return this.#commit(tasks.slice(half));
      }
      const flag = { applied: false };
      this.#awaiting.set(batch, flag);
      const target = spec.base + 1;
      const outcome = await this.#link.append(data, spec.base, deadline - Date.now());
      if (outcome.kind === "stored" && !outcome.duplicate) {
        this.#feed(outcome.seq, data);
        // Hand the message to the other nodes at once (faster than their consumers), which
        // also tells one whose delivery was lost that the log grew.
        this.#link.publish(TAIL_SUBJECT, withSeq(outcome.seq, data));
      }
      if (outcome.kind !== "unknown") await this.#waitApplied(target, deadline);
      else await new Promise((r) => setTimeout(r, 100));
      // From here on an apply treats the batch as another node's (its hooks publish it); one
      // already running counts it as ours and sets the flag: let that one finish.
      this.#awaiting.delete(batch);
      if (this.#applying) await this.#applying;
      if (flag.applied) {
        this.#failing = undefined;
        for (const t of tasks) t.resolve(t.result);
        return;
      }
      if (Date.now() >= deadline || this.#closed) {
        const why = outcome.kind === "unknown" ? outcome.error : "log did not settle";
        this.#failing = `cluster unavailable: ${why}`;
        log.warn("cluster write deadline passed", { reason: why });
        const err = new StorageUnavailableError(`cluster write deadline passed (${why})`);
        for (const t of tasks) t.reject(err);
        return;
      }
      // Another node took position `target` (or the append's fate was unknown): catch up, retry.
    }
  }

  /** Writes a write set to the raw databases (inside a transaction). */
  #write(writes: Write[], mine: boolean): void {
    for (const w of writes) {
      if (!mine && LOCAL_DBS.has(w[1])) continue;
      const db = this.#rawDb(w[1]);
      if (w[0] === 0) db.put(w[2], w[3]);
      else db.remove(w[2]);
    }
  }

  #feed(seq: number, data: Uint8Array): void {
    if (seq <= this.#applied || this.#buffer.has(seq)) return;
    this.#buffer.set(seq, data);
    void this.#drain();
  }

  async #drain(): Promise<void> {
    if (this.#applying) return;
    let done!: () => void;
    this.#applying = new Promise((r) => (done = r));
    try {
      while (this.#buffer.has(this.#applied + 1)) {
        const run: { seq: number; msg: LogMessage }[] = [];
        for (let s = this.#applied + 1; this.#buffer.has(s) && run.length < MAX_APPLY; s++) {
          run.push({ seq: s, msg: codec.unpack(this.#buffer.get(s)!) as LogMessage });
        }
        try {
          await this.#apply(run);
        } catch (err) {
          this.#failing = err instanceof StorageUnavailableError ? err.reason : String(err);
          log.error("cluster apply failed; retrying", { error: String(err) });
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        for (const { seq } of run) this.#buffer.delete(seq);
      }
    } finally {
      this.#applying = undefined;
      done();
    }
    if (this.#buffer.size > 0) this.#scheduleRepair();
  }

  /** Applies consecutive log messages in one local commit, then tells the hooks. */
  async #apply(run: { seq: number; msg: LogMessage }[]): Promise<void> {
    const own = new Map<LogMessage, { applied: boolean }>();
    for (const { msg } of run) {
      const flag = msg.o === this.#link.nodeId ? this.#awaiting.get(msg.b) : undefined;
      if (flag) own.set(msg, flag);
    }
    const remote = run.filter(({ msg }) => !own.has(msg)).flatMap(({ msg }) => msg.w);
    for (const h of this.#hooks) h.before(remote);
    const last = run[run.length - 1].seq;
    try {
      // Synchronous: no hand-off to LMDB's write thread; with overlapping sync the commit is
      // visible at once and reaches the disk in the background.
      this.root.transactionSync(() => {
        for (const { msg } of run) this.#write(msg.w, msg.o === this.#link.nodeId);
        this.#state.put("applied", last);
      });
    } catch (caught) {
      const err = await asStorageError(caught);
      for (const h of this.#hooks) h.after(remote, false);
      throw err;
    }
    this.#applied = last;
    for (const flag of own.values()) flag.applied = true;
    for (const h of this.#hooks) h.after(remote, true);
    const due = this.#appliedWaiters.filter((w) => w.seq <= last);
    this.#appliedWaiters = this.#appliedWaiters.filter((w) => w.seq > last);
    for (const w of due) w.wake();
  }

  /** Resolves true once position `seq` is applied here, false at `deadline`. Fetches missing
   * messages from the stream when they do not arrive on their own. */
  #waitApplied(seq: number, deadline: number): Promise<boolean> {
    if (this.#applied >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#appliedWaiters = this.#appliedWaiters.filter((w) => w !== waiter);
        resolve(false);
      }, Math.max(0, deadline - Date.now()));
      const waiter = {
        seq,
        wake: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.#appliedWaiters.push(waiter);
      this.#scheduleRepair(seq);
    });
  }

  /** After a short grace (the consumer is usually faster), reads missing positions from the
   * stream: the first gap in the buffer, or up to `upTo`. */
  #scheduleRepair(upTo = 0): void {
    this.#repairTarget = Math.max(this.#repairTarget, upTo);
    if (this.#repairTimer || this.#closed) return;
    this.#repairTimer = setTimeout(async () => {
      this.#repairTimer = undefined;
      let want = this.#repairTarget;
      let lowestBuffered = Infinity;
      for (const w of this.#appliedWaiters) want = Math.max(want, w.seq);
      for (const s of this.#buffer.keys()) {
        want = Math.max(want, s);
        lowestBuffered = Math.min(lowestBuffered, s);
      }
      // While the consumer keeps delivering in order (a catch-up), let it: read only a real gap.
      const flowing = Date.now() - this.#lastDelivery < 50;
      if (flowing && lowestBuffered === Infinity) want = 0;
      else if (flowing) want = Math.min(want, lowestBuffered - 1);
      try {
        for (let s = this.#applied + 1; s <= want && !this.#closed; s++) {
          if (this.#buffer.has(s) || s <= this.#applied) continue;
          const data = await this.#link.read(s);
          if (!data) break;
          this.#feed(s, data);
        }
      } catch (err) {
        log.warn("cluster repair read failed", { error: String(err) });
      }
      if (this.#applied >= this.#repairTarget) this.#repairTarget = 0;
      if (this.#appliedWaiters.length > 0 || this.#buffer.size > 0 || this.#repairTarget > 0) {
        this.#scheduleRepair();
      }
    }, 50);
  }

  async #checkTail(): Promise<void> {
    if (this.#closed || !this.#link.connected()) return;
    try {
      const last = await this.#link.lastSeq();
      if (last > this.#applied) this.#scheduleRepair(last);
    } catch { /* the next check tries again */ }
  }
}
