/**
 * A durable outbox of webhook deliveries over one LMDB database. A delivery is staged in the
 * same transaction as the change that caused it (so a committed change always has its
 * deliveries, and a refused one has none), or in its own transaction (`add`), kept until it
 * is delivered or given up, and resumed after a restart. Keys are `[dueAt, id]`, so the next
 * due delivery is the first key.
 */
import type { Database, Key } from "lmdb";
import type { StoreEnv } from "../store/env.ts";

/** What every stored delivery has; products add their own fields. */
export interface OutboxEntry {
  id: string;
  /** The JSON body, fixed at staging (the same on every attempt). */
  body: string;
  /** Attempts made so far. */
  attempt: number;
}

/** The outbox over the database `dbName`. */
export class WebhookOutbox<T extends OutboxEntry> {
  #db: Database<T, Key>;
  #env: StoreEnv;

  constructor(env: StoreEnv, dbName: string) {
    this.#env = env;
    this.#db = env.db<T>(dbName);
  }

  /** Writes `item`, due now; call inside the transaction of the change that caused it. */
  stage(item: T): void {
    this.#db.put([Date.now(), item.id], item);
  }

  /** Writes `items`, due now, in one transaction of their own; resolves once durable. */
  async add(items: T[]): Promise<void> {
    await this.#env.transaction(() => items.forEach((item) => this.stage(item)));
  }

  /** Deliveries due at `now`, oldest first, at most `limit`. */
  due(now: number, limit: number): { key: Key; item: T }[] {
    const out: { key: Key; item: T }[] = [];
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
  async retryAt(key: Key, item: T, dueAt: number): Promise<void> {
    await this.#env.transaction(() => {
      this.#db.remove(key);
      this.#db.put([dueAt, item.id], { ...item, attempt: item.attempt + 1 });
    });
  }
}
