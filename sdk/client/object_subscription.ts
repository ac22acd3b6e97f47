/**
 * A live, read-only copy of one Durable Object over a `phoenix` Socket: the join snapshot,
 * then `change` / `batch` / `purge` events (docs/objects.md "Channel"). After a reconnect it
 * joins again with `after_log_id = logId` and a fresh token for the new socket id (tokens are
 * bound to socket ids), so nothing is missed or applied twice.
 *
 * Why it manages its own channel instead of phoenix's automatic rejoin: phoenix rejoins the
 * moment the transport opens, before the server's `connected` frame names the new socket id,
 * so the old token would be refused. Each connection therefore gets a fresh phoenix Channel,
 * joined once the socket id is known and the token for it has been fetched.
 */

import type { Channel, Socket } from "phoenix";
import { SocketWatch } from "./connection.ts";
import { StreamCursor } from "./stream_cursor.ts";
import { Topic } from "../shared/topic.ts";

/** An object's state: slot name -> value (type it with `ObjectSubscription<MyState>`). */
export type ObjectState = Record<string, unknown>;

/** One slot write: `set` (with the value) or `delete`. */
export type SlotOp<State extends ObjectState = ObjectState> = {
  [K in keyof State & string]: { op: "set" | "delete"; key: K; value: State[K] | undefined };
}[keyof State & string];

/** What `on("change")` listeners receive. */
export type ObjectChange<State extends ObjectState = ObjectState> =
  | { type: "snapshot"; log_id: number; state: Partial<State>; reset?: true }
  | ({ type: "change"; log_id: number } & SlotOp<State>)
  | { type: "batch"; log_id: number; ops: SlotOp<State>[] }
  | { type: "purge"; log_id: 0; epoch?: string };

/** Options of `new ObjectSubscription()`. */
export interface ObjectSubscriptionOptions {
  /**
   * The current server socket id, when the socket is already connected (e.g. the
   * RealtimeClient's getter). Without it the subscription waits for the next `connected` frame.
   */
  socketId?: () => string | undefined;
}

/** Body the client POSTs to the customer's auth endpoint for a Durable Object (spec). */
export function objectAuthBody(socketId: string, type: string, key: string) {
  return { socket_id: socketId, object_type: type, object_key: key };
}

type Listener<T> = (value: T) => void;

/**
 * A live copy of one Durable Object; see the module comment. `State` types the slots (slot
 * name -> value); a slot not written yet is absent, hence `Partial<State>`.
 */
export class ObjectSubscription<State extends ObjectState = ObjectState> {
  readonly topic: string;
  /** Slot name -> value, current as of `logId`. */
  state: Partial<State> = {};
  /** Where the copy resumes from on a rejoin (`after_log_id` + `epoch`). */
  readonly #cursor = new StreamCursor("log_id");
  #socket: Socket;
  #getAuth: (socketId: string) => Promise<string | undefined>;
  #socketId?: string;
  #channel?: Channel;
  #generation = 0;
  #synced = false;
  #closed = false;
  #refs: string[];
  #changes = new Set<Listener<ObjectChange<State>>>();
  #offRefusal: () => void;
  #errors = new Set<Listener<string>>();
  #syncWaiters: (() => void)[] = [];

  /**
   * Subscribes to `durable:{appKey}:{type}:{key}`. `getAuth(socketId)` returns a token with
   * `object:read:{type}/{key}` for that socket (e.g. POSTing `objectAuthBody(...)` to the
   * customer's endpoint); it is called again after every reconnect.
   */
  constructor(
    socket: Socket,
    appKey: string,
    type: string,
    key: string,
    getAuth: (socketId: string) => Promise<string | undefined>,
    options: ObjectSubscriptionOptions = {},
  ) {
    if (!type || /[/:]/.test(type) || !key) {
      throw new TypeError(
        `Object type must be non-empty without "/" or ":", and key non-empty; got ${type}/${key}.`,
      );
    }
    this.topic = Topic.of("durable", appKey, `${type}:${key}`).key;
    this.#socket = socket;
    this.#getAuth = getAuth;
    this.#refs = [
      socket.onMessage((message) => {
        const msg = message as {
          topic?: string;
          event?: string;
          payload?: { socket_id?: unknown };
        };
        if (msg.topic === "phoenix" && msg.event === "connected") {
          this.#socketId = String(msg.payload?.socket_id);
          void this.#start();
        }
      }),
      socket.onClose(() => this.#drop()),
    ];
    // A refused connection (unknown app key, ...) is this object's error too.
    this.#offRefusal = SocketWatch.of(socket).onError((err) => {
      if (err.fatal) this.#emitError(err.reason);
    });
    const refused = SocketWatch.of(socket).refusal;
    if (refused) queueMicrotask(() => this.#emitError(refused.reason));
    const known = options.socketId?.();
    if (known && socket.isConnected()) {
      this.#socketId = known;
      void this.#start();
    }
  }

  /** Position of the latest applied write (0 before the first snapshot or after a purge). */
  get logId(): number {
    return this.#cursor.offset ?? 0;
  }

  /** The object stream's epoch (a purge starts a new one); sent back on rejoin. */
  get epoch(): string | undefined {
    return this.#cursor.epoch;
  }

  /** Listens for snapshots and writes (`change`) or join failures (`error`, with the reason). */
  on(event: "change", callback: Listener<ObjectChange<State>>): () => void;
  on(event: "error", callback: Listener<string>): () => void;
  on(event: "change" | "error", callback: Listener<any>): () => void {
    const set = event === "change" ? this.#changes : this.#errors;
    set.add(callback);
    return () => set.delete(callback);
  }

  /** Resolves once a snapshot has been received (at once when it already has). */
  whenSynced(): Promise<void> {
    return this.#synced
      ? Promise.resolve()
      : new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  /** Leaves the channel and stops following reconnects. */
  close(): void {
    this.#closed = true;
    this.#drop();
    this.#socket.off(this.#refs);
    this.#offRefusal();
  }

  /** Leaves the current channel (if any) and cancels a join waiting for its token. */
  #drop(): void {
    this.#generation++;
    const channel = this.#channel;
    this.#channel = undefined;
    channel?.leave();
  }

  async #start(): Promise<void> {
    this.#drop();
    const generation = this.#generation;
    const socketId = this.#socketId;
    if (this.#closed || !socketId) return;
    let auth: string | undefined;
    try {
      auth = await this.#getAuth(socketId);
    } catch (err) {
      return this.#emitError(`auth failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (generation !== this.#generation || this.#closed) return;
    // A function (phoenix calls params on every join push), so a phoenix-driven rejoin after a
    // join timeout sends the current position.
    const params = () => {
      const p: Record<string, unknown> = {};
      if (auth !== undefined) p.auth = auth;
      return this.#synced ? { ...p, ...this.#cursor.params() } : p;
    };
    const channel = this.#socket.channel(this.topic, params as unknown as object);
    this.#channel = channel;
    const mine = () => this.#channel === channel;
    for (const event of ["change", "batch", "purge"] as const) {
      channel.on(event, (payload) => {
        if (mine()) this.#apply(event, payload);
      });
    }
    channel.onError(() => {
      if (!mine()) return;
      // Transport errors are followed by a `connected` frame; a server-side crash is not.
      if (this.#socket.isConnected()) void this.#start();
      else this.#drop();
    });
    channel.join()
      .receive("ok", (snapshot) => {
        if (mine()) this.#onSnapshot(snapshot);
      })
      .receive("error", (response) => {
        if (!mine()) return;
        this.#drop();
        this.#emitError(String(response?.reason ?? "join refused"));
      });
  }

  #onSnapshot(
    snapshot: {
      state: Record<string, unknown>;
      log_id: number;
      epoch?: string;
      replay?: string;
      reset?: boolean;
    },
  ): void {
    this.state = { ...snapshot.state } as Partial<State>;
    const reset = this.#cursor.joined(snapshot);
    this.#synced = true;
    this.#emit({
      type: "snapshot",
      log_id: this.logId,
      state: this.state,
      ...(reset ? { reset: true as const } : {}),
    });
    for (const resolve of this.#syncWaiters.splice(0)) resolve();
  }

  #apply(event: "change" | "batch" | "purge", payload: any): void {
    if (event === "purge") {
      this.state = {};
      this.#cursor.purged(payload?.epoch);
      return this.#emit({ type: "purge", log_id: 0, epoch: this.epoch });
    }
    const logId = Number(payload.log_id);
    if (logId <= this.logId) return; // already applied
    if (this.#synced && logId !== this.logId + 1) {
      // A gap cannot happen per the channel contract; resynchronise rather than diverge.
      void this.#start();
      return;
    }
    const ops = event === "batch" ? payload.ops : [payload];
    const next: Record<string, unknown> = { ...this.state };
    for (const op of ops) {
      if (op.op === "delete") delete next[op.key];
      else next[op.key] = op.value;
    }
    this.state = next as Partial<State>;
    this.#cursor.advance(logId);
    // The server's frames, typed by the app's State.
    const change = event === "batch"
      ? { type: "batch", log_id: logId, ops: payload.ops }
      : { type: "change", log_id: logId, op: payload.op, key: payload.key, value: payload.value };
    this.#emit(change as ObjectChange<State>);
  }

  #emit(change: ObjectChange<State>): void {
    for (const cb of [...this.#changes]) cb(change);
  }

  #emitError(reason: string): void {
    for (const cb of [...this.#errors]) cb(reason);
  }
}
