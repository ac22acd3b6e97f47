/**
 * Server SDK client for one Durable Object: the HTTP API under
 * `/api/v1/objects/{app_id}/{type}/{key}` (docs/objects.md). Failures throw `SwitchboardError`
 * with the HTTP `status`, the parsed `body` (`{ error }`) and that error text as `message`.
 */
import { objectTypeProblem } from "../shared/capability.ts";
import { type Connection, sendRequest, SwitchboardError } from "./auth.ts";

/** Any JSON value a slot can hold. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** An object's full state at a log position. */
export interface ObjectSnapshot {
  state: Record<string, JsonValue>;
  log_id: number;
}

/** One transaction operation (`value` for set / append, `by` for increment, default 1). */
export type TransactionOp =
  | { op: "set"; key: string; value: JsonValue }
  | { op: "delete"; key: string }
  | { op: "increment"; key: string; by?: number }
  | { op: "append"; key: string; value: JsonValue };

/** A replay item: increments and appends appear as `set` of the result; a delete has value null. */
export interface ObjectLogItem {
  op: "set" | "delete";
  key: string;
  value: JsonValue;
  log_id: number;
}

/** Typed calls on one Durable Object. */
export class ObjectsClient {
  readonly type: string;
  readonly key: string;
  readonly #conn: Connection;
  readonly #base: string;

  /** `appId` is the App ID or App Key used as the `{app_id}` path segment. */
  constructor(conn: Connection, appId: string, type: string, key: string) {
    for (const [what, v] of [["appId", appId], ["type", type], ["key", key]]) {
      if (typeof v !== "string" || v === "") {
        throw new TypeError(`ObjectsClient needs a non-empty ${what}, got ${JSON.stringify(v)}.`);
      }
    }
    const problem = objectTypeProblem(type);
    if (problem) throw new TypeError(`${problem}, got ${JSON.stringify(type)}.`);
    this.#conn = conn;
    this.type = type;
    this.key = key;
    this.#base = `/api/v1/objects/${encodeURIComponent(appId)}/${encodeURIComponent(type)}/${
      encodeURIComponent(key)
    }`;
  }

  async #call<T>(method: string, suffix: string, body?: unknown): Promise<T> {
    try {
      return await sendRequest(this.#conn, method, this.#base + suffix, body) as T;
    } catch (err) {
      // Surface the server's `{ error }` text as the message.
      if (err instanceof SwitchboardError) {
        const b = err.body as { error?: unknown } | undefined;
        if (typeof b?.error === "string") throw new SwitchboardError(err.status, err.body, b.error);
      }
      throw err;
    }
  }

  #slot(slot: string): string {
    if (typeof slot !== "string" || slot === "") {
      throw new TypeError(`slot must be a non-empty string, got ${JSON.stringify(slot)}.`);
    }
    return `/${encodeURIComponent(slot)}`;
  }

  /** Full state and log_id (`{ state: {}, log_id: 0 }` for a never-written object). */
  get(): Promise<ObjectSnapshot> {
    return this.#call("GET", "");
  }

  /**
   * One slot's value, null when unset. A slot named `log` cannot be read here (`GET /log` is
   * the replay route); read it from `get().state`.
   */
  async getSlot(slot: string): Promise<JsonValue> {
    if (slot === "log") return (await this.get()).state.log ?? null;
    return (await this.#call<{ value: JsonValue }>("GET", this.#slot(slot))).value;
  }

  /** Sets one slot; resolves with the write's log_id. */
  async set(slot: string, value: JsonValue): Promise<number> {
    return (await this.#call<{ log_id: number }>("PUT", this.#slot(slot), { value })).log_id;
  }

  /** Sets several slots atomically (one `batch` event); resolves with the log_id. */
  async patch(values: Record<string, JsonValue>): Promise<number> {
    return (await this.#call<{ log_id: number }>("PATCH", "", values)).log_id;
  }

  /** Adds `by` (default 1) to a numeric slot (unset counts as 0). */
  increment(slot: string, by?: number): Promise<{ log_id: number; value: number }> {
    return this.#call("POST", "/increment", by === undefined ? { slot } : { slot, by });
  }

  /** Appends `value` to the list at `slot` (created when unset); resolves with the log_id. */
  async append(slot: string, value: JsonValue): Promise<number> {
    return (await this.#call<{ log_id: number }>("POST", "/append", { slot, value })).log_id;
  }

  /** Deletes one slot; resolves with the log_id. */
  async delete(slot: string): Promise<number> {
    return (await this.#call<{ log_id: number }>("DELETE", this.#slot(slot))).log_id;
  }

  /** Applies all ops in one log entry (one `batch` event), or none on error (422). */
  async transaction(ops: TransactionOp[]): Promise<number> {
    return (await this.#call<{ log_id: number }>("POST", "/transaction", ops)).log_id;
  }

  /** Replay items with log_id greater than `after` (default 0), oldest first. */
  async log(after = 0): Promise<ObjectLogItem[]> {
    return (await this.#call<{ items: ObjectLogItem[] }>("GET", `/log?after=${after}`)).items;
  }

  /** Deletes all state and log entries: the object is back to never-written. */
  async purge(): Promise<void> {
    await this.#call("DELETE", "");
  }
}
