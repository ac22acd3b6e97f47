/**
 * `RealtimeClient`: channels (PubSub) for browsers, Deno, Bun and Node, on top of the official
 * phoenix `Socket`. Learns its socket id from the server's first frame, fetches a fresh token
 * per socket (tokens bind socket ids), and on reconnect resubscribes with `after_serial` so
 * the app sees every event once, in order (deduplicated by serial). See docs/channels.md.
 */
import { type Channel, Socket } from "phoenix";
import {
  ConnectionError,
  type ConnectionErrorListener,
  type SocketWatch,
  transportFor,
  watchSocket,
  type WebSocketConstructor,
} from "./connection.ts";
import { msgpackEncode, msgpackSocketOptions } from "./msgpack_serializer.ts";
import { objectAuthBody, type ObjectState, ObjectSubscription } from "./object_subscription.ts";
import { StreamCursor } from "./stream_cursor.ts";
import { Topic } from "../shared/topic.ts";

/** What a token source returns: the token, or `{ auth, channel_data? }`. */
export type AuthResult = string | { auth: string; channel_data?: string | Record<string, unknown> };

/** Params handed to `authCallback` and POSTed to `authEndpoint`. */
export interface ChannelAuthParams {
  socket_id: string;
  channel_name: string;
  auth_info?: unknown;
  [extra: string]: unknown;
}

/** Options of `new RealtimeClient(appKey, options)`. */
export interface RealtimeOptions {
  /** Socket URL `ws://HOST:PORT/socket` (one ending in `/websocket` is accepted too). */
  endpoint?: string;
  /** Customer endpoint answering `{ auth, channel_data? }` to POST `{ socket_id, channel_name, auth_info? }`. */
  authEndpoint?: string;
  /** Alternative token source: call `done(err, result)` or return the result (or a promise). */
  authCallback?: (
    params: ChannelAuthParams,
    done: (err: unknown, result?: AuthResult) => void,
  ) => unknown;
  /** Extra headers on the authEndpoint request. */
  authHeaders?: Record<string, string>;
  /** Extra body fields on the authEndpoint request. */
  authParams?: Record<string, unknown>;
  /** `msgpack` switches the socket to MessagePack binary frames (default JSON). */
  messageFormat?: "json" | "msgpack";
  /** Same as `messageFormat`. */
  serializer?: "json" | "msgpack";
  reconnectAfterMs?: number | ((tries: number) => number);
  rejoinAfterMs?: number | ((tries: number) => number);
  /** False: do not connect until `connect()` (default true). */
  autoConnect?: boolean;
  /** Extra socket URL params. */
  params?: Record<string, unknown>;
  /** Push/join timeout in ms (phoenix default 10 s). */
  timeout?: number;
  /**
   * The WebSocket constructor (default: the global `WebSocket`). Where there is none (Node 20)
   * the client loads the `ws` package itself (`npm install ws`); pass one to use another.
   */
  transport?: WebSocketConstructor;
}

export type { WebSocketConstructor };

/** The events of a channel: event name -> its data (the default allows any name, data `unknown`). */
export type EventMap = Record<string, unknown>;

/** What every event callback gets beside the data: the event's envelope. */
export interface EventMeta {
  /** The event's position in the channel's history (absent on ephemeral channels). */
  serial?: number;
  /** The publishing socket (client events) and client id, when the server sent them. */
  socket_id?: string;
  client_id?: string;
  [field: string]: unknown;
}

/** The join reply of a channel (`serial`, `epoch`, `presence` on presence channels, ...). */
export interface JoinReply {
  serial?: number;
  epoch?: string;
  replay?: string;
  /** Presence channels: the members at the join and how many there are. */
  presence?: { members: { user_id: string; user_info?: unknown }[]; count: number };
  [field: string]: unknown;
}

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /** Fetch a token for this channel (default: only for `private-` / `presence-`). */
  auth?: boolean;
  /** Passed to the token source as `auth_info`. */
  authInfo?: unknown;
  /** Replay events after this serial on the first join. */
  afterSerial?: number;
}

/** A callback of `bind`: the event's data and its envelope. */
export type EventCallback<Data = unknown> = (data: Data, meta: EventMeta) => void;

/** A callback of `bindAll`: every event of the channel, presence events included. */
export type AnyEventCallback = (event: string, data: unknown, meta: EventMeta) => void;

/** The largest frame the server takes (docs/limits.md): a bigger publish is refused at once. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/**
 * Events of every subscription beside the app's: presence events (presence channels) and
 * the client's own `switchboard:*` events (never sent by the server).
 */
export interface SubscriptionEvents<Member = unknown> {
  /** A member joined (presence channels). */
  "presence:join": { user_id: string; user_info?: Member };
  /** A member left (presence channels). */
  "presence:leave": { user_id: string };
  /** The join reply, after every (re)join. */
  "switchboard:subscribed": JoinReply;
  /** The subscription failed for good (`reason`, e.g. `unknown app key`). */
  "switchboard:error": { reason: string };
  /** A join got no reply in time (phoenix retries it); `reason` says what was waited for. */
  "switchboard:timeout": { reason: string };
}

const asMs = (v: number | ((t: number) => number) | undefined) =>
  typeof v === "number" ? () => v : v;

/** A connection to Switchboard channels. */
export class RealtimeClient {
  readonly appKey: string;
  /** The underlying phoenix Socket (shared by object subscriptions). */
  readonly socket: Socket;
  /** The server-assigned id of the current connection; null while disconnected. */
  socketId: string | null = null;
  readonly #options: RealtimeOptions;
  // deno-lint-ignore no-explicit-any
  readonly #subs = new Map<string, ChannelSubscription<any, any>>();
  #idWaiters: { ok: (id: string) => void; fail: (err: Error) => void }[] = [];
  readonly #watch: SocketWatch;
  #errorListeners = new Set<ConnectionErrorListener>();

  /** Creates the client and connects unless `autoConnect` is false. */
  constructor(appKey: string, options: RealtimeOptions = {}) {
    if (typeof appKey !== "string" || appKey === "") {
      throw new TypeError("RealtimeClient needs an app key.");
    }
    this.appKey = appKey;
    this.#options = options;
    const endpoint = (options.endpoint ?? defaultEndpoint()).replace(/\/websocket\/?(\?.*)?$/, "");
    const msgpack = (options.messageFormat ?? options.serializer) === "msgpack";
    const params = {
      ...options.params,
      app_key: appKey,
      ...(msgpack ? { format: "msgpack" } : {}),
    };
    // Cast: phoenix's bundled typings type encode/decode narrower than the runtime accepts.
    this.socket = new Socket(
      endpoint,
      {
        transport: transportFor(options.transport),
        params,
        ...(msgpack ? msgpackSocketOptions : {}),
        ...(options.reconnectAfterMs !== undefined
          ? { reconnectAfterMs: asMs(options.reconnectAfterMs) }
          : {}),
        ...(options.rejoinAfterMs !== undefined
          ? { rejoinAfterMs: asMs(options.rejoinAfterMs) }
          : {}),
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      } as ConstructorParameters<typeof Socket>[1],
    );
    this.socket.onMessage((message) => {
      const msg = message as { topic: string; event: string; payload: unknown };
      if (msg.topic === "phoenix" && msg.event === "connected") {
        this.#connected(String((msg.payload as { socket_id?: unknown }).socket_id));
      }
    });
    this.#watch = watchSocket(this.socket);
    this.#watch.onError((err) => this.#failed(err));
    const lost = () => {
      if (this.socketId === null) return;
      this.socketId = null;
      for (const sub of this.#subs.values()) sub._detach();
    };
    this.socket.onClose(lost);
    this.socket.onError(lost);
    if (options.autoConnect !== false) this.socket.connect();
  }

  /** Opens the socket (after `autoConnect: false`, `disconnect()` or a refusal). */
  connect(): void {
    this.#watch.retry();
    this.socket.connect();
  }

  /**
   * Listens for connection errors: a refusal (`error.fatal`: `unknown app key`, `origin not
   * allowed`, no WebSocket in this runtime; the client stopped reconnecting) or a retried
   * failure (server unreachable, app at its connection limit). Returns the unsubscribe
   * function. Without a listener, a refusal is printed with `console.error`.
   */
  on(event: "error", listener: ConnectionErrorListener): () => void {
    if (event !== "error") throw new TypeError(`RealtimeClient.on: unknown event ${event}`);
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  /** How long a push or join waits for its reply (the `timeout` option, else 10 s). */
  get timeoutMs(): number {
    return (this.socket as unknown as { timeout: number }).timeout;
  }

  /** The refusal that stopped the client (until the next `connect()`), else null. */
  get error(): ConnectionError | null {
    return this.#watch.refusal;
  }

  /** Closes the socket; subscriptions resume (with replay) on the next `connect()`. */
  disconnect(): void {
    this.socket.disconnect();
    this.socketId = null;
    for (const sub of this.#subs.values()) sub._detach();
  }

  /** Resolves with the socket id once connected; rejects when the connection is refused. */
  socketIdReady(): Promise<string> {
    if (this.socketId !== null) return Promise.resolve(this.socketId);
    const refusal = this.#watch.refusal;
    if (refusal) return Promise.reject(refusal);
    return new Promise((ok, fail) => this.#idWaiters.push({ ok, fail }));
  }

  /**
   * Subscribes to a channel (returned at once; `ready` settles with the first join). Type the
   * channel with `subscribe<{ message: { text: string } }, MemberInfo>(name)`: `bind` and
   * `publish` then check event names and data, `members` holds `MemberInfo`.
   */
  subscribe<Events extends EventMap = EventMap, Member = unknown>(
    channelName: string,
    opts: SubscribeOptions = {},
  ): ChannelSubscription<Events, Member> {
    const existing = this.#subs.get(channelName);
    if (existing) return existing;
    const sub = new ChannelSubscription<Events, Member>(
      this,
      channelName,
      opts,
      () => this.#subs.delete(channelName),
    );
    this.#subs.set(channelName, sub);
    if (this.#watch.refusal) sub._fail(this.#watch.refusal.reason, this.#watch.refusal);
    else if (this.socketId !== null) sub._attach(this.socketId);
    return sub;
  }

  /**
   * A live read-only copy of a Durable Object. The token comes from the same source as
   * channels: `authCallback` / `authEndpoint` get `{ socket_id, object_type, object_key }`.
   */
  object<State extends ObjectState = ObjectState>(
    type: string,
    key: string,
  ): ObjectSubscription<State> {
    const hasSource = this.#options.authCallback || this.#options.authEndpoint;
    return new ObjectSubscription<State>(
      this.socket,
      this.appKey,
      type,
      key,
      async (socketId) =>
        hasSource ? (await this.authorize(objectAuthBody(socketId, type, key))).auth : undefined,
      { socketId: () => this.socketId ?? undefined },
    );
  }

  /** Fetches a token for `params` (channel or object auth body) from the configured source. */
  async authorize(
    params: ChannelAuthParams | Record<string, unknown>,
  ): Promise<{ auth: string; channel_data?: unknown }> {
    const o = this.#options;
    let result: AuthResult | undefined;
    if (o.authCallback) {
      result = await new Promise<AuthResult>((resolve, reject) => {
        const done = (err: unknown, r?: AuthResult) => (err ? reject(err) : resolve(r!));
        Promise.resolve(o.authCallback!(params as ChannelAuthParams, done)).then((r) => {
          if (r !== undefined) resolve(r as AuthResult);
        }, reject);
      });
    } else if (o.authEndpoint) {
      const res = await fetch(o.authEndpoint, {
        method: "POST",
        headers: { "content-type": "application/json", ...o.authHeaders },
        body: JSON.stringify({ ...o.authParams, ...params }),
      });
      if (!res.ok) throw new Error(`authEndpoint answered HTTP ${res.status}`);
      result = await res.json();
    } else {
      throw new Error(
        `${
          params.channel_name ?? "This resource"
        } needs a token: set authEndpoint or authCallback.`,
      );
    }
    if (typeof result === "string") return { auth: result };
    if (!result || typeof result.auth !== "string") {
      throw new Error("The token source returned no auth.");
    }
    return result;
  }

  #connected(id: string) {
    this.socketId = id;
    for (const w of this.#idWaiters.splice(0)) w.ok(id);
    for (const sub of this.#subs.values()) sub._attach(id);
  }

  /** A connection error: tell the app; a refusal also fails everything waiting. */
  #failed(err: ConnectionError) {
    if (err.fatal) {
      for (const w of this.#idWaiters.splice(0)) w.fail(err);
      for (const sub of this.#subs.values()) sub._fail(err.reason, err);
    }
    for (const listener of [...this.#errorListeners]) {
      try {
        listener(err);
      } catch (e) {
        console.error("switchboard: an error listener threw:", e);
      }
    }
    if (err.fatal && this.#errorListeners.size === 0) console.error(`switchboard: ${err.message}`);
  }
}

/**
 * One subscribed channel. Events reach `bind` callbacks as `(data, { serial, ... })`.
 * `Events` types the channel's events (name -> data), `Member` a presence member's info.
 */
export class ChannelSubscription<Events extends EventMap = EventMap, Member = unknown> {
  readonly name: string;
  /** Presence members by user id (presence channels). */
  readonly members: Map<string, Member> = new Map();
  /** Where the subscription resumes from (`after_serial` + `epoch`). */
  readonly #cursor = new StreamCursor("serial");
  /** Settles with the first join reply, or rejects with its refusal (or the connection's). */
  readonly ready: Promise<JoinReply>;
  #client: RealtimeClient;
  #opts: SubscribeOptions;
  #remove: () => void;
  #bindings = new Map<string, Set<EventCallback<never>>>();
  #global = new Set<AnyEventCallback>();
  #channel: Channel | null = null;
  #joined: Promise<Channel> | null = null;
  #settle!: { ok: (r: JoinReply) => void; fail: (e: Error) => void };
  #closed = false;
  #joinFailed: (err: Error) => void = () => {};

  /** Use `RealtimeClient.subscribe`. */
  constructor(client: RealtimeClient, name: string, opts: SubscribeOptions, remove: () => void) {
    this.#client = client;
    this.name = name;
    this.#opts = opts;
    this.#remove = remove;
    this.ready = new Promise((ok, fail) => (this.#settle = { ok, fail }));
    this.ready.catch(() => {}); // observed through bind("switchboard:error") too
  }

  /** Serial of the latest event seen (null before the first join and on ephemeral channels). */
  get lastSerial(): number | null {
    return this.#cursor.offset ?? null;
  }

  /** The channel stream's epoch from the last join; sent back with `after_serial`. */
  get epoch(): string | undefined {
    return this.#cursor.epoch;
  }

  /** Calls `cb(data, meta)` for `event` (typed by the channel's `Events`). */
  bind<E extends keyof (Events & SubscriptionEvents<Member>) & string>(
    event: E,
    cb: EventCallback<(Events & SubscriptionEvents<Member>)[E]>,
  ): this {
    let set = this.#bindings.get(event);
    if (!set) this.#bindings.set(event, set = new Set());
    set.add(cb as EventCallback<never>);
    return this;
  }

  /**
   * Calls `cb(event, data, meta)` for every event: the app's, presence events
   * (`presence:join`, `presence:leave`) and the client's own `switchboard:*` events.
   */
  bindAll(cb: AnyEventCallback): this {
    this.#global.add(cb);
    return this;
  }

  /** Removes a `bindAll` callback. */
  unbindAll(cb: AnyEventCallback): this {
    this.#global.delete(cb);
    return this;
  }

  /** Removes one callback, every callback of `event`, or every callback. */
  unbind<E extends keyof (Events & SubscriptionEvents<Member>) & string>(
    event?: E,
    cb?: EventCallback<(Events & SubscriptionEvents<Member>)[E]>,
  ): this {
    if (event === undefined) {
      this.#bindings.clear();
      this.#global.clear();
    } else if (cb === undefined) this.#bindings.delete(event);
    else this.#bindings.get(event)?.delete(cb as EventCallback<never>);
    return this;
  }

  /**
   * Publishes a client event (data must be a JSON object); resolves with `{ serial }`. Rejects
   * with `reason` set: at once for a frame over the server's 1 MiB limit, else with the
   * server's refusal (e.g. `Validation failed: payload larger than 10240 bytes`) or a timeout.
   */
  async publish<E extends keyof Events & string>(
    event: E,
    data: Events[E] & object = {} as Events[E] & object,
  ): Promise<{ serial: number | null }> {
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new TypeError("publish() data must be a JSON object.");
    }
    const bytes = this.#frameBytes(event, data);
    if (bytes > MAX_FRAME_BYTES) {
      const reason =
        `frame too large: limit is ${MAX_FRAME_BYTES} bytes (this publish is ${bytes} bytes)`;
      throw Object.assign(new Error(`publish of ${event} on ${this.name} refused: ${reason}`), {
        reason,
      });
    }
    while (!this.#closed) {
      const channel = await (this.#joined ?? this.#nextJoin());
      if (channel !== this.#channel) continue;
      return await new Promise((resolve, reject) => {
        channel.push(event, data as object)
          .receive("ok", resolve)
          .receive(
            "error",
            (r: { reason: string }) =>
              reject(Object.assign(new Error(r.reason), { reason: r.reason })),
          )
          .receive("timeout", () => {
            const reason = "timeout";
            reject(
              Object.assign(
                new Error(
                  `publish of ${event} on ${this.name} timed out: no reply from the server in ${this.#client.timeoutMs} ms`,
                ),
                { reason },
              ),
            );
          });
      });
    }
    throw Object.assign(new Error(`publish of ${event} on ${this.name}: subscription closed`), {
      reason: "subscription closed",
    });
  }

  /** The size of the frame a publish sends (what the server's frame limit counts). */
  #frameBytes(event: string, data: object): number {
    const topic = Topic.of("pubsub", this.#client.appKey, this.name).key;
    const frame = ["0000", "0000", topic, event, data];
    if (this.#msgpack()) {
      let size = 0;
      msgpackEncode(
        { join_ref: "0000", ref: "0000", topic, event, payload: data },
        (b) => (size = b.byteLength),
      );
      return size;
    }
    const json = JSON.stringify(frame);
    // A UTF-16 unit is at most 3 UTF-8 bytes: count exactly only near the limit.
    return json.length * 3 <= MAX_FRAME_BYTES ? json.length : new TextEncoder().encode(json).length;
  }

  #msgpack(): boolean {
    return (this.#client.socket as unknown as { encode?: unknown }).encode === msgpackEncode;
  }

  /** Leaves the channel and forgets the subscription. */
  unsubscribe(): void {
    this.#closed = true;
    this.#remove();
    this.#channel?.leave();
    this.#channel = null;
  }

  /** @internal Joins on socket `socketId` (fresh token, replay after `lastSerial`). */
  async _attach(socketId: string): Promise<void> {
    if (this.#closed) return;
    const kind = this.name.startsWith("private-") || this.name.startsWith("presence-");
    const params: Record<string, unknown> = {};
    let ready!: (ch: Channel) => void;
    this.#joined = new Promise((r, fail) => {
      ready = r;
      this.#joinFailed = fail;
    });
    this.#joined.catch(() => {});
    try {
      if (this.#opts.auth ?? kind) {
        const a = await this.#client.authorize({
          socket_id: socketId,
          channel_name: this.name,
          ...(this.#opts.authInfo !== undefined ? { auth_info: this.#opts.authInfo } : {}),
        });
        params.auth = a.auth;
        if (a.channel_data !== undefined) params.channel_data = a.channel_data;
      }
    } catch (err) {
      return this._fail(String((err as Error)?.message ?? err));
    }
    if (this.#closed || this.#client.socketId !== socketId) return; // a newer connection took over
    const channel = this.#client.socket.channel(
      Topic.of("pubsub", this.#client.appKey, this.name).key,
      () => {
        // Until the first join replied, the app's `afterSerial` (if any) is the position.
        const first = this.#cursor.offset === undefined && this.#opts.afterSerial !== undefined;
        return {
          ...params,
          ...(first ? { after_serial: this.#opts.afterSerial } : this.#cursor.params()),
        };
      },
    );
    channel.onMessage = (event: string, payload: unknown) => {
      if (channel === this.#channel) this.#dispatch(event, payload);
      return payload;
    };
    this.#channel = channel;
    channel.join()
      .receive("ok", (resp: JoinReply) => {
        // A `replay: "reset"` reply (the channel's history restarted) also lands here: the
        // position restarts at the reply's serial, in the reply's epoch.
        this.#cursor.joined(resp);
        if (resp.presence) {
          this.members.clear();
          for (const m of resp.presence.members) this.members.set(m.user_id, m.user_info as Member);
        }
        ready(channel);
        this.#settle.ok(resp);
        this.#emit("switchboard:subscribed", resp, {});
      })
      .receive("error", (r: { reason: string }) => this._fail(r.reason))
      .receive("timeout", () => {
        if (channel !== this.#channel) return;
        // phoenix retries the join itself; say what is being waited for.
        this.#emit("switchboard:timeout", {
          reason:
            `join of ${this.name} timed out: no reply from the server in ${this.#client.timeoutMs} ms (retrying)`,
        }, {});
      });
  }

  /** @internal Drops the channel of a lost connection (it is rejoined with a fresh token). */
  _detach(): void {
    const ch = this.#channel;
    if (!ch) return;
    this.#channel = null;
    (ch as unknown as { rejoinTimer?: { reset(): void } }).rejoinTimer?.reset();
    this.#client.socket.remove(ch);
  }

  #nextJoin(): Promise<Channel> {
    return this.#client.socketIdReady().then(() => this.#joined ?? this.#nextJoin());
  }

  /** @internal Fails the subscription: `ready` and pending publishes reject with `reason`. */
  _fail(reason: string, cause?: Error): void {
    this._detach();
    const err = cause ?? Object.assign(new Error(reason), { reason });
    this.#joinFailed(err); // pending publishes reject instead of waiting forever
    this.#settle.fail(err);
    this.#emit("switchboard:error", { reason }, {});
  }

  #dispatch(event: string, raw: unknown) {
    if (event.startsWith("phx_") || event.startsWith("chan_reply_")) return;
    const payload = (raw ?? {}) as { user_id?: string; user_info?: unknown; serial?: unknown } & {
      data?: unknown;
    };
    if (event === "presence:join") {
      this.members.set(String(payload.user_id), payload.user_info as Member);
    } else if (event === "presence:leave") this.members.delete(String(payload.user_id));
    if (event.startsWith("presence:")) return this.#emit(event, payload, {});
    const serial = payload.serial;
    if (typeof serial === "number" && !this.#cursor.advance(serial)) return; // already seen
    this.#emit(event, payload.data, payload as EventMeta);
  }

  #emit(event: string, data: unknown, meta: EventMeta) {
    for (const cb of [...this.#global]) {
      try {
        cb(event, data, meta);
      } catch (err) {
        console.error(`channel ${this.name} callback for all events threw:`, err);
      }
    }
    for (const cb of [...(this.#bindings.get(event) ?? [])] as EventCallback<unknown>[]) {
      try {
        cb(data, meta);
      } catch (err) {
        console.error(`channel ${this.name} callback for ${event} threw:`, err);
      }
    }
  }
}

function defaultEndpoint(): string {
  const loc = (globalThis as { location?: Location }).location;
  if (loc?.host) return `${loc.protocol === "https:" ? "wss" : "ws"}://${loc.host}/socket`;
  return "ws://127.0.0.1:4000/socket";
}
