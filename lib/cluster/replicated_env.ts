/**
 * The clustered store: the same LMDB environment and transaction API as one node, with every
 * write ordered through one replicated JetStream log, so every node's LMDB holds the same
 * data after the same sequence of writes.
 *
 * A write transaction runs speculatively: inside an LMDB write transaction that is aborted
 * afterwards, recording each key it reads and each `put`/`remove` it makes (its write set),
 * against the local state at log position `base`. The write set is appended to the log; every
 * node, the writer included, applies the log strictly in order, each run of messages in one
 * local commit, and skips a write set that read a key written after its `base`
 * (`conflicts.ts`: optimistic concurrency, decided alike on every node). The writer's
 * transaction resolves once its write set is applied here (acknowledged after the JetStream
 * ack, a replicated quorum, and the local commit); a skipped one runs again on fresh state.
 * Products keep their code: a transaction may run more than once, so it must be a plain
 * function of the stored state, which it already is.
 *
 * Node-local databases (webhook outboxes, the system table) are recorded too but applied only
 * by the node that wrote them; a transaction that writes only those commits locally.
 */
import type { Database, Key } from "lmdb";
import { Packr } from "msgpackr";
import { asStorageError, StorageUnavailableError } from "../store/errors.ts";
import { emptyReads, rangeBounds, type ReadSet, RecentWrites } from "./conflicts.ts";
import { type RemoteApplyHook, StoreEnv, type Write } from "../store/env.ts";
import { log } from "../log/mod.ts";
import type { ClusterLink } from "./link.ts";

/** Databases that belong to one node: applied only there, and left out of snapshots. */
export const NODE_ONLY_DBS = ["system", "chat:outbox", "pusher:outbox"];
/** The database recording the log position applied (key `applied`). */
export const POSITION_DB = "cluster:state";
/** Databases applied only on the node that wrote them (the last two are kept alike on every
 * node by the apply itself). */
const LOCAL_DBS = new Set([...NODE_ONLY_DBS, POSITION_DB, "cluster:recent"]);

/** Positions a write set's `base` may lag behind the position it lands at before it counts as
 * stale whatever it read (the window of written keys every node keeps). */
const CONFLICT_WINDOW = 4096;

/** Write sets per log message, at most (more transactions wait for the next message). */
const MAX_BATCH = 256;
/** Log messages applied per local commit, at most. */
const MAX_APPLY = 512;

const codec = new Packr({ useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0]);

/** One log message: the writing node, its batch id, the position its reads saw, what it read
 * and its write set. */
interface LogMessage {
  o: string;
  b: string;
  base: number;
  r: ReadSet;
  w: Write[];
}

/** How a batch written here ended when the log reached it. */
interface Outcome {
  done: "applied" | "stale" | null;
}

interface Task {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
  writes?: Write[];
  /** Set once the task ran against the log's tail as it was after a failure. */
  checked?: boolean;
}

const ABORT = Symbol("speculation done");
/** Why a node cannot go on (see `snapshots.ts`: a restart restores the newest snapshot). */
const BEHIND = "cluster unavailable: the log was compacted past this node's position; restart the node";
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
  #reading: ReadSet | null = null;
  #recent: RecentWrites;
  #recentDb: Database<[string, Key][], Key>;
  #hooks: RemoteApplyHook[] = [];
  #queue: Task[] = [];
  #pumping = false;
  /** Batches written here and not yet reached by the log. */
  #awaiting = new Map<string, Outcome>();
  #applied: number;
  #buffer = new Map<number, Uint8Array>();
  #applying: Promise<void> | undefined;
  #appliedWaiters: { seq: number; wake: () => void }[] = [];
  #repairTimer: ReturnType<typeof setTimeout> | undefined;
  #lastDelivery = 0;
  /** Highest position known to exist that repair should reach. */
  #repairTarget = 0;
  #tailTimer: ReturnType<typeof setInterval> | undefined;
  #tailRequest: Promise<number> | undefined;
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
    this.#state = this.#rawDb<number>(POSITION_DB);
    this.#applied = this.#state.get("applied") ?? 0;
    this.#recentDb = this.#rawDb<[string, Key][]>("cluster:recent");
    const stored: [number, [string, Key][]][] = [];
    for (const { key, value } of this.#recentDb.getRange({ start: this.#applied - CONFLICT_WINDOW + 1 })) {
      stored.push([key as number, value]);
    }
    this.#recent = new RecentWrites(CONFLICT_WINDOW, stored);
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
    const { first, last: target } = await this.#link.bounds();
    if (first > this.#applied + 1) throw new Error(BEHIND);
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

  override get replicated(): boolean {
    return true;
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

  /** The database as products see it: inside a transaction, reads and writes are recorded. */
  #recorder(name: string, raw: Database): Database {
    const wholeRead = () => this.#reading?.a.push(name);
    const bound = new Map<PropertyKey, unknown>();
    const own: Record<string, unknown> = {
      put: (key: Key, value: unknown) => {
        this.#recording?.push([0, name, key, value]);
        return raw.put(key, value);
      },
      remove: (key: Key) => {
        this.#recording?.push([1, name, key]);
        return raw.remove(key);
      },
      get: (key: Key, ...rest: unknown[]) => {
        this.#reading?.p.push([name, key]);
        return (raw.get as (...a: unknown[]) => unknown)(key, ...rest);
      },
      doesExist: (key: Key, ...rest: unknown[]) => {
        this.#reading?.p.push([name, key]);
        return (raw.doesExist as (...a: unknown[]) => boolean)(key, ...rest);
      },
      getRange: (opts?: { start?: Key; end?: Key; reverse?: boolean }) => {
        this.#reading?.g.push([name, ...rangeBounds(opts)]);
        return raw.getRange(opts);
      },
      getKeys: (opts?: { start?: Key; end?: Key; reverse?: boolean }) => {
        this.#reading?.g.push([name, ...rangeBounds(opts)]);
        return raw.getKeys(opts);
      },
    };
    return new Proxy(raw, {
      get(target, prop) {
        if (typeof prop === "string" && prop in own) return own[prop];
        const v = Reflect.get(target, prop, target);
        if (typeof v !== "function") return v;
        let b = bound.get(prop);
        if (!b) {
          // Any other method may read in ways not described above: count it as reading the
          // whole database (safe: at worst a needless retry).
          const fn = v.bind(target);
          bound.set(prop, (b = (...args: unknown[]) => {
            wholeRead();
            return fn(...args);
          }));
        }
        return b;
      },
    });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#queue.length > 0) {
        const tasks = this.#queue.splice(0, MAX_BATCH);
        // A task must never be left unsettled (its request would hang): an unexpected error
        // fails the batch's unsettled tasks (settled ones ignore it) with 503.
        await this.#commit(tasks).catch((err) => {
          log.error("cluster write failed", { error: String(err) });
          const failure = new StorageUnavailableError(`cluster write failed (${String(err)})`);
          for (const t of tasks) t.reject(failure);
        });
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Runs `tasks` speculatively; drops a task that throws (see `#fail`) and runs the rest
   * again. */
  #speculate(tasks: Task[]): { base: number; tasks: Task[]; reads: ReadSet } {
    for (;;) {
      let failed: { task: Task; error: unknown } | undefined;
      let base = 0;
      const reads = emptyReads();
      this.#reading = reads;
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
        this.#reading = null;
      }
      if (!failed) return { base, tasks, reads };
      this.#fail(failed.task, failed.error, base);
      tasks = tasks.filter((t) => t !== failed!.task);
    }
  }

  async #commit(tasks: Task[]): Promise<void> {
    const deadline = Date.now() + this.#opts.writeDeadlineMs;
    let lastError = "log did not settle";
    for (;;) {
      if (this.#applying) await this.#applying;
      let spec: { base: number; tasks: Task[]; reads: ReadSet };
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
      const message: LogMessage = { o: this.#link.nodeId, b: batch, base: spec.base, r: spec.reads, w: writes };
      const data = codec.pack(message);
      if (data.byteLength > this.#link.maxPayload && tasks.length > 1) {
        const half = Math.ceil(tasks.length / 2);
        await this.#commit(tasks.slice(0, half));
        return this.#commit(tasks.slice(half));
      }
      const outcome: Outcome = { done: null };
      this.#awaiting.set(batch, outcome);
      // The same message id on a retry: JetStream stores it once and answers with its position.
      let seq = 0;
      while (seq === 0 && Date.now() < deadline && !this.#closed) {
        const r = await this.#link.append(data, batch, deadline - Date.now());
        if (r.kind === "stored") seq = r.seq;
        else {
          lastError = r.error;
          await new Promise((res) => setTimeout(res, 100));
        }
      }
      if (seq > 0) {
        this.#feed(seq, data);
        // Hand the message to the other nodes at once (faster than their consumers), which
        // also tells one whose delivery was lost that the log grew.
        this.#link.publish(TAIL_SUBJECT, withSeq(seq, data));
        await this.#waitApplied(seq, deadline);
      }
      // From here on an apply treats the batch as another node's (its hooks publish it); one
      // already running counts it as ours and sets the outcome: let that one finish.
      this.#awaiting.delete(batch);
      if (this.#applying) await this.#applying;
      if (outcome.done === "applied") {
        this.#failing = undefined;
        for (const t of tasks) t.resolve(t.result);
        return;
      }
      if (outcome.done === null && (Date.now() >= deadline || this.#closed)) {
        this.#failing = `cluster unavailable: ${lastError}`;
        log.warn("cluster write deadline passed", { reason: lastError });
        const err = new StorageUnavailableError(`cluster write deadline passed (${lastError})`);
        for (const t of tasks) t.reject(err);
        return;
      }
      // Stale (it read a key another write changed first): run it again on fresh state.
    }
  }

  /**
   * A transaction that threw (a 404, a 409) may have read state this node has not caught up
   * with (another node's write on its way): before the error stands, this node catches up
   * with the log's tail and runs the task once more, so a failure is as current as a success
   * (which the conflict check keeps current).
   */
  #fail(task: Task, error: unknown, base: number): void {
    if (task.checked) return task.reject(error);
    task.checked = true;
    void (async () => {
      try {
        const tail = await this.#tail();
        if (tail <= base) return task.reject(error);
        if (!(await this.#waitApplied(tail, Date.now() + this.#opts.writeDeadlineMs))) return task.reject(error);
      } catch {
        return task.reject(error);
      }
      if (this.#closed) return task.reject(error);
      this.#queue.push(task);
      void this.#pump();
    })();
  }

  /** The log's last position; concurrent callers share one request. */
  #tail(): Promise<number> {
    this.#tailRequest ??= this.#link.lastSeq().finally(() => (this.#tailRequest = undefined));
    return this.#tailRequest;
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

  /** Applies consecutive log messages in one local commit (skipping stale write sets), then
   * tells the hooks. */
  async #apply(run: { seq: number; msg: LogMessage }[]): Promise<void> {
    const me = this.#link.nodeId;
    const own = new Map<LogMessage, Outcome>();
    const fresh: { seq: number; msg: LogMessage }[] = [];
    const written: [number, [string, Key][]][] = [];
    const before = this.#applied;
    for (const item of run) {
      const { seq, msg } = item;
      const outcome = msg.o === me ? this.#awaiting.get(msg.b) : undefined;
      if (outcome) own.set(msg, outcome);
      const stale = this.#recent.stale(msg.base, seq, msg.r);
      const keys: [string, Key][] = stale ? [] : msg.w.filter((w) => !LOCAL_DBS.has(w[1])).map((w) => [w[1], w[2]]);
      this.#recent.record(seq, keys);
      written.push([seq, keys]);
      if (!stale) fresh.push(item);
      if (outcome) outcome.done = stale ? "stale" : null;
    }
    const remote = fresh.filter(({ msg }) => !own.has(msg)).flatMap(({ msg }) => msg.w);
    for (const h of this.#hooks) h.before(remote);
    const last = run[run.length - 1].seq;
    try {
      // LMDB's write thread commits (and syncs, overlapping the next commit) while this thread
      // goes on receiving the log and serving requests.
      this.root.transactionSync(() => {
        for (const { msg } of fresh) this.#write(msg.w, msg.o === me);
        for (const [seq, keys] of written) {
          this.#recentDb.put(seq, keys);
          if (seq - CONFLICT_WINDOW > 0) this.#recentDb.remove(seq - CONFLICT_WINDOW);
        }
        this.#state.put("applied", last);
      });
    } catch (caught) {
      const err = await asStorageError(caught);
      this.#recent.rollback(before);
      for (const o of own.values()) o.done = null;
      for (const h of this.#hooks) h.after(remote, false);
      throw err;
    }
    this.#applied = last;
    for (const [msg, o] of own) if (o.done === null && fresh.some((f) => f.msg === msg)) o.done = "applied";
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
      const { first, last } = await this.#link.bounds();
      if (first > this.#applied + 1 && this.#failing !== BEHIND) {
        this.#failing = BEHIND;
        log.error(BEHIND, { applied: this.#applied, log_first: first });
      }
      if (last > this.#applied) this.#scheduleRepair(last);
    } catch { /* the next check tries again */ }
  }
}
