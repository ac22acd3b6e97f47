/**
 * The write path of the replicated store. A write transaction runs speculatively against the
 * local state at log position `base`, recording what it reads and writes; the batch's write
 * sets are appended to the log, and the transaction resolves once this node applied the batch
 * from the stream (`apply.ts`) and a majority applied the log alike that far (`../divergence/`).
 * A skipped one runs again on fresh state; one not applied within the write deadline (from the
 * request's arrival) fails with 503. A transaction may thus run more than once: products' are
 * plain functions of the stored state.
 */
import type { Transaction } from "lmdb";
import { StorageUnavailableError } from "../../store/errors.ts";
import { log } from "../../log/mod.ts";
import { emptyReads, type ReadSet } from "../conflicts.ts";
import { WriteOverlay } from "../overlay.ts";
import type { SnapshotRun } from "../replicated_table.ts";
import { requestPositions } from "../read_your_writes.ts";
import type { Applier } from "./apply.ts";
import { codec, encodeSeq, HEAD_SUBJECT } from "./state.ts";
import type { LogMessage, Outcome, ReplicaState, Task } from "./state.ts";
import { observePhase } from "../../metrics/cluster.ts";

/** Write sets per log message, at most (more transactions wait for the next message). */
const MAX_BATCH = 256;
/** How long one publish attempt waits for its reply before it is retried (same message id). */
const PUBLISH_TRY_MS = 1000;
/** A batch out this long without an outcome no longer holds the next batches back. */
const SLOW_BATCH_MS = 250;
/** Batches in flight at once, at most. */
const MAX_INFLIGHT = 8;
const ABORT = Symbol("speculation done");

/** See the module comment. */
export class Proposer {
  #pumpTimer: ReturnType<typeof setTimeout> | undefined;
  /** Calls that sent a speculative run to a write transaction, logged once each. */
  #unsupportedSeen = new Set<string>();

  constructor(private s: ReplicaState, private apply: Applier) {}

  /** Queues `fn` (see the module comment), noting its position for the HTTP request being
   * answered (`read_your_writes.ts`). */
  transaction<T>(fn: () => T): Promise<T> {
    const s = this.s;
    if (s.closed) return Promise.reject(new StorageUnavailableError("server shutting down"));
    const stopped = s.diverged ?? s.rebuilding;
    if (stopped) return Promise.reject(new StorageUnavailableError(stopped));
    const deadline = Date.now() + s.opts.writeDeadlineMs;
    const request = requestPositions.getStore();
    const position = request &&
      ((seq: number) => void (request.position = Math.max(request.position, seq)));
    return new Promise<T>((resolve, reject) => {
      s.queue.push({ fn, deadline, position, resolve: resolve as (v: unknown) => void, reject });
      this.#pump();
    });
  }

  /** Closing: no more batches go out, the queued writes fail. */
  close(): void {
    clearTimeout(this.#pumpTimer);
    this.#expireQueued(Infinity);
  }

  /**
   * Sends queued writes out as batches: at once when no batch is out (the writes queued
   * meanwhile go together as the next one: group commit), beside the ones out when they have
   * waited `SLOW_BATCH_MS` (a lost reply or a stalled log must not hold every other write).
   * Queued writes whose deadline passed fail with 503.
   */
  #pump(): void {
    const s = this.s;
    clearTimeout(this.#pumpTimer);
    this.#pumpTimer = undefined;
    if (s.closed) return;
    const now = Date.now();
    this.#expireQueued(now);
    while (s.queue.length > 0) {
      let oldest = Infinity;
      for (const b of s.inflight) oldest = Math.min(oldest, b.since);
      if (
        s.inflight.size >= MAX_INFLIGHT || (s.inflight.size > 0 && now - oldest < SLOW_BATCH_MS)
      ) {
        let due = s.inflight.size >= MAX_INFLIGHT ? now + 100 : oldest + SLOW_BATCH_MS;
        for (const t of s.queue) due = Math.min(due, t.deadline);
        this.#pumpTimer = setTimeout(() => this.#pump(), Math.max(1, due - now));
        return;
      }
      const tasks = s.queue.splice(0, MAX_BATCH);
      const out = { since: now };
      const arrived = tasks.reduce((sum, t) => sum + t.deadline, 0) / tasks.length -
        s.opts.writeDeadlineMs;
      observePhase("queued", now - arrived);
      s.inflight.add(out);
      // A task must never be left unsettled (its request would hang): an unexpected error
      // fails the batch's unsettled tasks (settled ones ignore it) with 503.
      void this.#commit(tasks, out).catch((err) => {
        log.error("cluster write failed", { error: String(err) });
        const failure = new StorageUnavailableError(`cluster write failed (${String(err)})`);
        for (const t of tasks) t.reject(failure);
      }).finally(() => {
        s.inflight.delete(out);
        this.#pump();
      });
    }
  }

  /** Fails the queued writes whose deadline is before `now` with 503. */
  #expireQueued(now: number): void {
    const s = this.s;
    if (!s.queue.some((t) => t.deadline <= now)) return;
    const reason = s.closed
      ? "server shutting down"
      : `cluster write deadline passed (${s.failing ?? "queued behind a stalled log"})`;
    const err = new StorageUnavailableError(reason);
    for (const t of s.queue) if (t.deadline <= now) t.reject(err);
    s.queue = s.queue.filter((t) => t.deadline > now);
  }

  /**
   * Runs `tasks` one after the other against the state at the position applied (`base`), each
   * seeing the writes before it; records their reads and writes, undoes the writes; drops a
   * task that throws (`#fail`) and runs the rest again. The run reads an LMDB snapshot with the
   * writes kept in memory over it (`overlay.ts`), never waiting for the write lock (100-300 ms
   * on a loaded machine); a call the overlay cannot serve exactly runs it again in a write
   * transaction, aborted afterwards.
   */
  #speculate(tasks: Task[]): { base: number; tasks: Task[]; reads: ReadSet } {
    const s = this.s;
    let locked = false;
    for (;;) {
      let failed: { task: Task; error: unknown } | undefined;
      let base = 0;
      const reads = emptyReads();
      const run = (txn?: Transaction) => {
        base =
          (txn ? s.positions.get("applied", { transaction: txn }) : s.positions.get("applied")) ??
            0;
        for (const task of tasks) {
          s.recording = [];
          try {
            task.result = task.fn();
          } catch (error) {
            failed = { task, error };
            return;
          }
          task.writes = s.recording;
        }
      };
      let spec: SnapshotRun | undefined;
      s.reading = reads;
      const t0 = performance.now();
      try {
        if (locked) {
          s.local.root.transactionSync(() => {
            run();
            throw ABORT;
          });
        } else {
          const txn = s.local.root.useReadTransaction();
          spec = s.spec = { overlay: new WriteOverlay(), txn, views: new Map(), live: true };
          try {
            run(txn);
          } finally {
            spec.live = false;
            txn.done();
          }
        }
      } catch (err) {
        if (err !== ABORT) throw err;
      } finally {
        s.spec = null;
        s.recording = null;
        s.reading = null;
      }
      const took = performance.now() - t0;
      if (took >= 50) {
        log.warn("cluster speculation held the thread", {
          ms: Math.round(took),
          tasks: tasks.length,
          locked,
        });
      }
      if (spec?.unsupported !== undefined) {
        if (!this.#unsupportedSeen.has(spec.unsupported)) {
          this.#unsupportedSeen.add(spec.unsupported);
          log.warn("cluster speculation runs in a write transaction", { call: spec.unsupported });
        }
        locked = true;
        continue;
      }
      if (!failed) return { base, tasks, reads };
      this.#fail(failed.task, failed.error, base);
      tasks = tasks.filter((t) => t !== failed!.task);
    }
  }

  /** Runs `tasks` until their batch is applied from the log (resolving them) or their
   * deadline passes (503); `out.since` is reset at each new append (see `#pump`). */
  async #commit(tasks: Task[], out: { since: number }): Promise<void> {
    const s = this.s;
    let lastError = "log did not settle";
    for (;;) {
      let t0 = performance.now();
      // Speculate only with no apply pending; a catch-up may apply for seconds: the wait ends at
      // the batch's deadline.
      while (s.applying) {
        const left = Math.min(...tasks.map((t) => t.deadline)) - Date.now();
        if (left <= 0) return this.#missedDeadline(tasks, lastError);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([s.applying, new Promise((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
      observePhase("wait_apply", performance.now() - t0);
      t0 = performance.now();
      const stopped = s.diverged ?? s.rebuilding;
      if (stopped) {
        for (const t of tasks) t.reject(new StorageUnavailableError(stopped));
        return;
      }
      let spec: { base: number; tasks: Task[]; reads: ReadSet };
      try {
        spec = this.#speculate(tasks);
      } catch (err) {
        for (const t of tasks) t.reject(err);
        return;
      }
      tasks = spec.tasks;
      observePhase("speculate", performance.now() - t0);
      if (tasks.length === 0) return;
      const deadline = Math.min(...tasks.map((t) => t.deadline));
      const writes = tasks.flatMap((t) => t.writes!);
      // Node-local writes alone commit locally.
      if (writes.every((w) => s.localDbs.has(w[1]))) {
        try {
          await s.local.transaction(() => s.write(writes, true));
          for (const t of tasks) t.resolve(t.result);
        } catch (err) {
          for (const t of tasks) t.reject(err);
        }
        return;
      }
      const batch = crypto.randomUUID();
      const message: LogMessage = {
        o: s.link.nodeId,
        b: batch,
        base: spec.base,
        r: spec.reads,
        w: writes,
        h: this.apply.defence.printAt(spec.base),
      };
      // Packed once: a write to a long list carries the list's whole value.
      const data = codec.pack(message);
      if (data.byteLength > s.link.maxPayload && tasks.length > 1) {
        const half = Math.ceil(tasks.length / 2);
        await Promise.all([
          this.#commit(tasks.slice(0, half), out),
          this.#commit(tasks.slice(half), out),
        ]);
        return;
      }
      out.since = Date.now();
      const outcome: Outcome = { done: null, seq: 0 };
      s.awaiting.set(batch, outcome);
      lastError = await this.#append(message, data, outcome, deadline) ?? lastError;
      // From here on an apply treats the batch as another node's; one running counts it as ours
      // and sets the outcome: let that commit finish.
      s.awaiting.delete(batch);
      if (s.applyingRun) await s.applyingRun.catch(() => {});
      if (outcome.done !== null && outcome.ackedAt && outcome.applyAt) {
        observePhase("read", Math.max(0, outcome.applyAt - outcome.ackedAt));
        observePhase("apply", performance.now() - outcome.applyAt);
      }
      // Applied here: acknowledged once a majority applied the log alike that far. The others
      // are told the position exists; the next batch may go out meanwhile.
      if (outcome.done === "applied") {
        s.link.publish(HEAD_SUBJECT, encodeSeq(outcome.seq));
        s.inflight.delete(out);
        this.#pump();
      }
      // A node that stopped itself meanwhile (also on a claim) acknowledges nothing.
      t0 = performance.now();
      if (
        outcome.done === "applied" &&
        (!(await this.apply.defence.confirm(outcome.seq, deadline)) || s.diverged !== undefined)
      ) {
        lastError = s.diverged ?? "no majority of the nodes confirmed the log position";
        outcome.done = null;
      }
      if (outcome.done === "applied") {
        observePhase("confirm", performance.now() - t0);
        s.failing = undefined;
        s.lastAppend = Date.now();
        for (const t of tasks) {
          t.position?.(outcome.seq);
          t.resolve(t.result);
        }
        return;
      }
      if (outcome.done === null) {
        if (s.closed) lastError = "server shutting down";
        else if (Date.now() - s.lastAppend >= s.opts.writeDeadlineMs) {
          s.failing = `cluster unavailable: ${lastError}`;
        }
        return this.#missedDeadline(tasks, lastError);
      }
      // Stale (it read a key another write changed first): run it again on fresh state.
    }
  }

  /** Fails `tasks` with 503: their deadline passed, `lastError` being why. */
  #missedDeadline(tasks: Task[], lastError: string): void {
    log.warn("cluster write deadline passed", { reason: lastError });
    const err = new StorageUnavailableError(`cluster write deadline passed (${lastError})`);
    for (const t of tasks) t.reject(err);
  }

  /** Publishes `message` (packed as `data`) until the log as read from the stream holds it
   * (`outcome` set by the apply) or `deadline` passes; returns the last error seen. A publish
   * without a reply is retried under the same message id (stored once); a reply's position is
   * only where to read: applied that far without the batch, it is published again. */
  async #append(
    message: LogMessage,
    data: Uint8Array,
    outcome: Outcome,
    deadline: number,
  ): Promise<string | undefined> {
    const s = this.s;
    const batch = message.b;
    let lastError: string | undefined;
    while (outcome.done === null && !s.closed && !s.diverged) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const sent = performance.now();
      const r = await s.link.append(data, message.b, Math.min(PUBLISH_TRY_MS, left));
      outcome.ackedAt = performance.now();
      if (r.kind === "stored") observePhase("publish", outcome.ackedAt - sent);
      if (outcome.done !== null) break;
      if (r.kind === "unknown") {
        lastError = r.error;
        await new Promise((res) => setTimeout(res, 50));
        continue;
      }
      s.knownTail = Math.max(s.knownTail, r.seq);
      // Read the log up to the reply's position (the consumer or, failing that, direct reads).
      await this.apply.waitApplied(r.seq, deadline, outcome);
      if (outcome.done !== null || s.applied < r.seq) continue;
      lastError = `the log holds another message at position ${r.seq}`;
      log.warn("cluster publish reply names a position holding another message", {
        position: r.seq,
        batch,
      });
      // A duplicate pointing at another message: the leader's duplicate table disagrees with its
      // log (a diverged replica) for its whole window. Published under a new message id naming
      // the first (`a`): the apply counts both as one batch.
      if (r.duplicate) {
        message = { ...message, b: crypto.randomUUID(), a: batch };
        data = codec.pack(message);
        continue;
      }
      await new Promise((res) => setTimeout(res, 50));
    }
    return lastError;
  }

  /** A transaction that threw (a 404, a 409) may have read state not yet caught up with: it
   * runs once more after catching up with the log's tail, so a failure is as current as a
   * success (which the conflict check keeps current). */
  #fail(task: Task, error: unknown, base: number): void {
    const s = this.s;
    if (task.checked) return task.reject(error);
    task.checked = true;
    void (async () => {
      try {
        const tail = await s.tail();
        if (tail <= base) return task.reject(error);
        if (!(await this.apply.waitApplied(tail, task.deadline))) return task.reject(error);
      } catch {
        return task.reject(error);
      }
      if (s.closed) return task.reject(error);
      s.queue.push(task);
      this.#pump();
    })();
  }
}
