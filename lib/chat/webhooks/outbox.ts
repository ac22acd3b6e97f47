/**
 * The durable outbox of bot webhook deliveries. A delivery is staged in the same LMDB
 * transaction as the thread-log entry that caused it (so a committed change always has its
 * deliveries, and a refused one has none), kept until it is delivered or given up, and resumed
 * after a restart. Keys are `[dueAt, id]`, so the next due delivery is the first key.
 */
import type { Database, Key } from "lmdb";
import type { StoreEnv } from "../../store/env.ts";

/** One pending delivery, as stored. */
export interface OutboxItem {
  id: string;
  appId: string;
  botId: string;
  event: string;
  /** The JSON body, fixed at staging (the same on every attempt). */
  body: string;
  /** Attempts made so far. */
  attempt: number;
}

/** The outbox over one LMDB database. */
export class WebhookOutbox {
  #db: Database<OutboxItem, Key>;
  #env: StoreEnv;

  constructor(env: StoreEnv) {
    this.#env = env;
    this.#db = env.db<OutboxItem>("chat:outbox");
  }

  /** Writes `item`, due now; call inside the transaction of the change (a thread-log apply). */
  stage(item: OutboxItem): void {
    this.#db.put([Date.now(), item.id], item);
  }

  /** Deliveries due at `now`, oldest first, at most `limit`. */
  due(now: number, limit: number): { key: Key; item: OutboxItem }[] {
    const out: { key: Key; item: OutboxItem }[] = [];
    for (const { key, value } of this.#db.getRange({ start: [0], end: [now + 1], limit })) {
      out.push({ key, item: value });
    }
    return out;
  }

  /** When the next delivery is due (unix ms), or undefined when the outbox is empty. */
  nextDue(): number | undefined {
    for (const key of this.#db.getKeys({ limit: 1 })) return (key as [number, string])[0];
    return undefined;
  }

  /** Removes a delivery (delivered or given up). */
  async done(key: Key): Promise<void> {
    await this.#env.transaction(() => void this.#db.remove(key));
  }

  /** Moves a delivery to `dueAt` with its attempt count raised. */
  async retryAt(key: Key, item: OutboxItem, dueAt: number): Promise<void> {
    await this.#env.transaction(() => {
      this.#db.remove(key);
      this.#db.put([dueAt, item.id], { ...item, attempt: item.attempt + 1 });
    });
  }
}
