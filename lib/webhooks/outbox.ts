/**
 * A durable, bounded outbox of webhook deliveries over one LMDB database (node-local in a
 * cluster). A delivery is staged in the same transaction as the change that caused it
 * (`stage`, then `sync` once that change committed) or in a transaction of its own (`add`,
 * which can carry the caller's own writes), kept until it is delivered, given up or dropped,
 * and resumed after a restart.
 *
 * Rows are `["o", seq]` (seq grows with time, so key order is age order); other key shapes in
 * the same database belong to the caller. An in-memory index (seq -> app, lane, size, due
 * time) serves the sender's lanes and the bounds: each app may hold at most `maxCount`
 * deliveries and `maxBytes` of bodies per outbox; past that its oldest are dropped (counted in
 * `switchboard_webhook_dropped_total`).
 */
import process from "node:process";
import type { Key, Table } from "../store/table.ts";
import type { Storage } from "../store/storage.ts";
import { errorFields, log } from "../log/mod.ts";
import { record } from "../metrics/mod.ts";

/** What every stored delivery has; products add their own fields. */
export interface OutboxEntry {
  id: string;
  /** The app it belongs to (the bounds are per app). */
  appId: string;
  /** The JSON body, fixed at staging (the same on every attempt). */
  body: string;
  /** Attempts made so far. */
  attempt: number;
  /** When the next attempt is due (unix ms); set by the outbox. */
  dueAt?: number;
}

/** What the outbox knows of a delivery without reading it. */
export interface OutboxMeta {
  seq: number;
  appId: string;
  /** The sender's lane: deliveries to one receiver (see sender.ts). */
  lane: string;
  bytes: number;
  dueAt: number;
}

/** Per-app bounds of one outbox. */
export interface OutboxLimits {
  maxCount: number;
  maxBytes: number;
}

/** A positive integer from the environment, else `fallback`. */
function envInt(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** The default bounds: 10,000 deliveries and 16 MiB of bodies per app and outbox
 * (`SWITCHBOARD_WEBHOOK_OUTBOX_MAX_COUNT` / `_MAX_BYTES` change them; docs/limits.md). */
export function outboxLimits(): OutboxLimits {
  return {
    maxCount: envInt("SWITCHBOARD_WEBHOOK_OUTBOX_MAX_COUNT", 10_000),
    maxBytes: envInt("SWITCHBOARD_WEBHOOK_OUTBOX_MAX_BYTES", 16 * 1024 * 1024),
  };
}

/** A staged delivery whose transaction has not been seen committed yet is forgotten after this. */
const LIMBO_MS = 120_000;

/** Settings of one outbox. */
export interface OutboxOptions<T> {
  /** The metrics label: `pusher` or `bot`. */
  kind: string;
  /** The delivery's lane (one receiver). */
  laneOf: (item: T) => string;
  limits?: OutboxLimits;
}

/** See the module comment. */
export class WebhookOutbox<T extends OutboxEntry> {
  readonly kind: string;
  readonly env: Storage;
  #db: Table<T>;
  #laneOf: (item: T) => string;
  #limits: OutboxLimits;
  #index = new Map<number, OutboxMeta>();
  /** appId -> its deliveries' seqs (oldest first) and body bytes. */
  #apps = new Map<string, { seqs: Set<number>; bytes: number }>();
  #limbo = new Map<number, { lane: string; at: number }>();
  #lastSeq = 0;
  #listeners: ((meta: OutboxMeta) => void)[] = [];
  /** When a drop was last logged (one line per 10 s at most). */
  #droppedLoggedAt = 0;
  #droppedUnlogged = 0;

  /** Opens the outbox over the database `dbName` and indexes what it holds. */
  constructor(env: Storage, dbName: string, opts: OutboxOptions<T>) {
    this.env = env;
    this.kind = opts.kind;
    this.#db = env.nodeLocal<T>(dbName);
    this.#laneOf = opts.laneOf;
    this.#limits = opts.limits ?? outboxLimits();
    this.#load();
    record.webhookOutbox(this.kind, () => this.stats());
  }

  /** Calls `fn` for every delivery that enters the index (committed, due at `dueAt`). */
  onNew(fn: (meta: OutboxMeta) => void): void {
    this.#listeners.push(fn);
  }

  /** Every indexed delivery, oldest first. */
  entries(): OutboxMeta[] {
    return [...this.#index.values()];
  }

  /** The index entry of `seq`, or undefined when it is gone (done or dropped). */
  meta(seq: number): OutboxMeta | undefined {
    return this.#index.get(seq);
  }

  /** The stored delivery `seq`. */
  read(seq: number): T | undefined {
    return this.#db.get(["o", seq]);
  }

  /**
   * Writes `item`, due now; call inside the transaction of the change that caused it, and
   * `sync()` once that change is known to be committed.
   */
  stage(item: T): void {
    const seq = this.#nextSeq();
    const now = Date.now();
    this.#db.put(["o", seq], { ...item, dueAt: now });
    this.#limbo.set(seq, { lane: this.#laneOf(item), at: now });
  }

  /** Reads every indexed delivery's due time again from storage (a row changed by another
   * writer, such as the console's "retry now"); rows removed meanwhile are forgotten. */
  refresh(): void {
    for (const meta of [...this.#index.values()]) {
      const row = this.#db.get(["o", meta.seq]);
      if (!row) this.#forget(meta.seq);
      else if (row.dueAt !== undefined) meta.dueAt = row.dueAt;
    }
  }

  /** Indexes what `stage` wrote in transactions that have committed since. */
  sync(): void {
    const now = Date.now();
    for (const [seq, { at }] of this.#limbo) {
      const item = this.#db.get(["o", seq]);
      if (item) {
        this.#limbo.delete(seq);
        this.#insert(seq, item);
      } else if (now - at > LIMBO_MS) this.#limbo.delete(seq); // its transaction was undone
    }
    this.#enforceAll();
  }

  /**
   * Writes `items`, due now, in one transaction of their own, with `also` (the caller's own
   * writes) in it; resolves once durable and indexed.
   */
  async add(items: T[], also?: () => void): Promise<void> {
    const now = Date.now();
    const rows = items.map((item) => ({ seq: this.#nextSeq(), item: { ...item, dueAt: now } }));
    await this.env.transaction(() => {
      for (const { seq, item } of rows) this.#db.put(["o", seq], item);
      also?.();
    });
    const apps = new Set<string>();
    for (const { seq, item } of rows) {
      this.#insert(seq, item);
      apps.add(item.appId);
    }
    for (const appId of apps) this.#enforce(appId);
  }

  /** Forgets a delivery (delivered, given up or no longer wanted). */
  async done(seq: number): Promise<void> {
    if (!this.#forget(seq)) return;
    await this.env.transaction(() => void this.#db.remove(["o", seq]));
  }

  /** Stores the delivery's next attempt at `dueAt` (its attempt count raised). */
  async retry(seq: number, item: T, dueAt: number): Promise<void> {
    const meta = this.#index.get(seq);
    if (!meta) return;
    meta.dueAt = dueAt;
    await this.env.transaction(() => {
      // Dropped meanwhile: nothing to move.
      if (this.#index.has(seq)) {
        this.#db.put(["o", seq], { ...item, attempt: item.attempt + 1, dueAt });
      }
    });
  }

  /** Depth, bytes and the oldest delivery's age in seconds (0 when empty). */
  stats(): { depth: number; bytes: number; oldestAgeSeconds: number } {
    let bytes = 0;
    let oldest = Infinity;
    for (const app of this.#apps.values()) {
      bytes += app.bytes;
      for (const seq of app.seqs) {
        oldest = Math.min(oldest, seq);
        break;
      }
    }
    const age = oldest === Infinity ? 0 : Math.max(0, (Date.now() - seqTime(oldest)) / 1000);
    return { depth: this.#index.size, bytes, oldestAgeSeconds: age };
  }

  /** Indexes the stored deliveries; rows of the old key shape `[dueAt, id]` are moved. */
  #load(): void {
    const old: { key: Key; item: T }[] = [];
    for (const { key, value } of this.#db.getRange({})) {
      if (!Array.isArray(key)) continue;
      if (key[0] === "o" && typeof key[1] === "number") {
        this.#lastSeq = Math.max(this.#lastSeq, key[1]);
        this.#insert(key[1], value);
      } else if (typeof key[0] === "number") {
        old.push({ key, item: { ...value, appId: value.appId ?? "", dueAt: key[0] } });
      }
    }
    if (old.length === 0) return this.#enforceAll();
    const rows = old.map(({ key, item }) => ({ key, seq: this.#nextSeq(), item }));
    this.env.transaction(() => {
      for (const { key, seq, item } of rows) {
        this.#db.remove(key);
        this.#db.put(["o", seq], item);
      }
    }).then(() => {
      for (const { seq, item } of rows) this.#insert(seq, item);
      this.#enforceAll();
    }, (err) => log.error("webhook outbox upgrade failed", errorFields(err)));
  }

  #nextSeq(): number {
    // Milliseconds times 1024: later deliveries sort later, also after a restart.
    this.#lastSeq = Math.max(this.#lastSeq + 1, Date.now() * 1024);
    return this.#lastSeq;
  }

  #insert(seq: number, item: T): void {
    if (this.#index.has(seq)) return;
    const meta: OutboxMeta = {
      seq,
      appId: item.appId,
      lane: this.#laneOf(item),
      bytes: item.body.length,
      dueAt: item.dueAt ?? 0,
    };
    this.#index.set(seq, meta);
    let app = this.#apps.get(meta.appId);
    if (!app) this.#apps.set(meta.appId, app = { seqs: new Set(), bytes: 0 });
    app.seqs.add(seq);
    app.bytes += meta.bytes;
    for (const fn of this.#listeners) fn(meta);
  }

  #forget(seq: number): boolean {
    const meta = this.#index.get(seq);
    if (!meta) return false;
    this.#index.delete(seq);
    const app = this.#apps.get(meta.appId);
    if (app) {
      app.seqs.delete(seq);
      app.bytes -= meta.bytes;
      if (app.seqs.size === 0) this.#apps.delete(meta.appId);
    }
    return true;
  }

  #enforceAll(): void {
    for (const appId of [...this.#apps.keys()]) this.#enforce(appId);
  }

  /** Drops the app's oldest deliveries while it is over a bound. */
  #enforce(appId: string): void {
    const app = this.#apps.get(appId);
    if (!app) return;
    const { maxCount, maxBytes } = this.#limits;
    const dropped: number[] = [];
    for (const seq of app.seqs) {
      if (app.seqs.size <= maxCount && app.bytes <= maxBytes) break;
      this.#forget(seq);
      dropped.push(seq);
    }
    if (dropped.length === 0) return;
    record.webhookDropped(this.kind, dropped.length);
    this.#droppedUnlogged += dropped.length;
    if (Date.now() - this.#droppedLoggedAt >= 10_000) {
      log.warn("webhook outbox full: oldest deliveries dropped", {
        kind: this.kind,
        app: appId,
        dropped: this.#droppedUnlogged,
      });
      this.#droppedLoggedAt = Date.now();
      this.#droppedUnlogged = 0;
    }
    this.env.transaction(() => {
      for (const seq of dropped) this.#db.remove(["o", seq]);
    }).catch((err) => log.error("webhook outbox drop failed", errorFields(err)));
  }
}

/** The unix ms a seq was made at. */
function seqTime(seq: number): number {
  return Math.floor(seq / 1024);
}
