/**
 * `RealtimeClient`: channels (PubSub) for browsers, Deno, Bun and Node, on top of the official
 * phoenix `Socket`. Learns its socket id from the server's first frame, fetches a fresh token
 * per socket (tokens bind socket ids), and on reconnect resubscribes with `after_serial` so
 * the app sees every event once, in order (deduplicated by serial). See docs/channels.md.
 */
import { Socket } from "phoenix";
import { msgpackSocketOptions } from "./msgpack_serializer.ts";
import { objectAuthBody, ObjectSubscription } from "./object_subscription.ts";
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
   * The WebSocket constructor (default: the global `WebSocket`). Node 20 has none: pass
   * `WebSocket` from the `ws` package there (Node 22+, Deno, Bun and browsers need nothing).
   */
  transport?: WebSocketConstructor;
}

/** A WebSocket class, as the global `WebSocket` or the `ws` package's export. */
export type WebSocketConstructor = new (url: string, ...rest: any[]) => any;

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /** Fetch a token for this channel (default: only for `private-` / `presence-`). */
  auth?: boolean;
  /** Passed to the token source as `auth_info`. */
  authInfo?: unknown;
  /** Replay events after this serial on the first join. */
  afterSerial?: number;
}

/** Client-local events: `switchboard:subscribed` (join reply) and `switchboard:error` ({ reason }). */
export type EventCallback = (data: any, meta: Record<string, any>) => void;

const asMs = (v: number | ((t: number) => number) | undefined) =>
  typeof v === "number" ? () => v : v;

/** A connection to Switchboard channels. */
export class RealtimeClient {
  readonly appKey: string;
  /** The underlying phoenix Socket (shared by object subscriptions). */
  readonly socket: any;
  /** The server-assigned id of the current connection; null while disconnected. */
  socketId: string | null = null;
  readonly #options: RealtimeOptions;
  readonly #subs = new Map<string, ChannelSubscription>();
  #idWaiters: ((id: string) => void)[] = [];

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
    this.socket = new Socket(endpoint, {
      params,
      ...(msgpack ? msgpackSocketOptions : {}),
      ...(options.reconnectAfterMs !== undefined
        ? { reconnectAfterMs: asMs(options.reconnectAfterMs) }
        : {}),
      ...(options.rejoinAfterMs !== undefined
        ? { rejoinAfterMs: asMs(options.rejoinAfterMs) }
        : {}),
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.transport !== undefined ? { transport: options.transport } : {}),
    } as any);
    this.socket.onMessage((msg: { topic: string; event: string; payload: any }) => {
      if (msg.topic === "phoenix" && msg.event === "connected") {
        this.#connected(String(msg.payload.socket_id));
      }
    });
    const lost = () => {
      if (this.socketId === null) return;
      this.socketId = null;
      for (const sub of this.#subs.values()) sub._detach();
    };
    this.socket.onClose(lost);
    this.socket.onError(lost);
    if (options.autoConnect !== false) this.socket.connect();
  }

  /** Opens the socket (after `autoConnect: false` or `disconnect()`). */
  connect(): void {
    this.socket.connect();
  }

  /** Closes the socket; subscriptions resume (with replay) on the next `connect()`. */
  disconnect(): void {
    this.socket.disconnect();
    this.socketId = null;
    for (const sub of this.#subs.values()) sub._detach();
  }

  /** Resolves with the socket id once connected. */
  socketIdReady(): Promise<string> {
    if (this.socketId !== null) return Promise.resolve(this.socketId);
    return new Promise((resolve) => this.#idWaiters.push(resolve));
  }

  /** Subscribes to a channel (returned at once; `ready` settles with the first join). */
  subscribe(channelName: string, opts: SubscribeOptions = {}): ChannelSubscription {
    const existing = this.#subs.get(channelName);
    if (existing) return existing;
    const sub = new ChannelSubscription(
      this,
      channelName,
      opts,
      () => this.#subs.delete(channelName),
    );
    this.#subs.set(channelName, sub);
    if (this.socketId !== null) sub._attach(this.socketId);
    return sub;
  }

  /**
   * A live read-only copy of a Durable Object. The token comes from the same source as
   * channels: `authCallback` / `authEndpoint` get `{ socket_id, object_type, object_key }`.
   */
  object(type: string, key: string): ObjectSubscription {
    const hasSource = this.#options.authCallback || this.#options.authEndpoint;
    return new ObjectSubscription(
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
    for (const w of this.#idWaiters.splice(0)) w(id);
    for (const sub of this.#subs.values()) sub._attach(id);
  }
}

/** One subscribed channel. Events reach `bind` callbacks as `(data, { serial, ... })`. */
export class ChannelSubscription {
  readonly name: string;
  /** Presence members by user id (presence channels). */
  readonly members = new Map<string, unknown>();
  /** Where the subscription resumes from (`after_serial` + `epoch`). */
  readonly #cursor = new StreamCursor("serial");
  /** Settles with the first join reply, or rejects with its refusal. */
  readonly ready: Promise<Record<string, any>>;
  #client: RealtimeClient;
  #opts: SubscribeOptions;
  #remove: () => void;
  #bindings = new Map<string, Set<EventCallback>>();
  #global = new Set<(event: string, data: any, meta: Record<string, any>) => void>();
  #channel: any = null;
  #joined: Promise<any> | null = null;
  #settle!: { ok: (r: Record<string, any>) => void; fail: (e: Error) => void };
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

  /** Calls `cb(data, meta)` for `event`. */
  bind(event: string, cb: EventCallback): this {
    let set = this.#bindings.get(event);
    if (!set) this.#bindings.set(event, set = new Set());
    set.add(cb);
    return this;
  }

  /** Calls `cb(event, data, meta)` for every event (presence events included). */
  bindAll(cb: (event: string, data: any, meta: Record<string, any>) => void): this {
    this.#global.add(cb);
    return this;
  }

  /** Removes a `bindAll` callback. */
  unbindAll(cb: (event: string, data: any, meta: Record<string, any>) => void): this {
    this.#global.delete(cb);
    return this;
  }

  /** Removes one callback, every callback of `event`, or every callback. */
  unbind(event?: string, cb?: EventCallback): this {
    if (event === undefined) {
      this.#bindings.clear();
      this.#global.clear();
    } else if (cb === undefined) this.#bindings.delete(event);
    else this.#bindings.get(event)?.delete(cb);
    return this;
  }

  /** Publishes a client event (data must be a JSON object); resolves with `{ serial }`. */
  async publish(
    event: string,
    data: Record<string, unknown> = {},
  ): Promise<{ serial: number | null }> {
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new TypeError("publish() data must be a JSON object.");
    }
    while (!this.#closed) {
      const channel = await (this.#joined ?? this.#nextJoin());
      if (channel !== this.#channel) continue;
      return await new Promise((resolve, reject) => {
        channel.push(event, data)
          .receive("ok", resolve)
          .receive(
            "error",
            (r: { reason: string }) =>
              reject(Object.assign(new Error(r.reason), { reason: r.reason })),
          )
          .receive("timeout", () => reject(new Error("publish timed out")));
      });
    }
    throw new Error("subscription closed");
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
    let ready!: (ch: any) => void;
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
      return this.#fail(String((err as Error)?.message ?? err));
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
    channel.onMessage = (event: string, payload: any) => {
      if (channel === this.#channel) this.#dispatch(event, payload);
      return payload;
    };
    this.#channel = channel;
    channel.join()
      .receive("ok", (resp: Record<string, any>) => {
        // A `replay: "reset"` reply (the channel's history restarted) also lands here: the
        // position restarts at the reply's serial, in the reply's epoch.
        this.#cursor.joined(resp);
        if (resp.presence) {
          this.members.clear();
          for (const m of resp.presence.members) this.members.set(m.user_id, m.user_info);
        }
        ready(channel);
        this.#settle.ok(resp);
        this.#emit("switchboard:subscribed", resp, {});
      })
      .receive("error", (r: { reason: string }) => this.#fail(r.reason));
  }

  /** @internal Drops the channel of a lost connection (it is rejoined with a fresh token). */
  _detach(): void {
    const ch = this.#channel;
    if (!ch) return;
    this.#channel = null;
    ch.rejoinTimer?.reset();
    this.#client.socket.remove(ch);
  }

  #nextJoin(): Promise<any> {
    return this.#client.socketIdReady().then(() => this.#joined ?? this.#nextJoin());
  }

  #fail(reason: string) {
    this._detach();
    const err = Object.assign(new Error(reason), { reason });
    this.#joinFailed(err); // pending publishes reject instead of waiting forever
    this.#settle.fail(err);
    this.#emit("switchboard:error", { reason }, {});
  }

  #dispatch(event: string, payload: any) {
    if (event.startsWith("phx_") || event.startsWith("chan_reply_")) return;
    if (event === "presence:join") this.members.set(payload.user_id, payload.user_info);
    else if (event === "presence:leave") this.members.delete(payload.user_id);
    if (event.startsWith("presence:")) return this.#emit(event, payload, {});
    const serial = payload?.serial;
    if (typeof serial === "number" && !this.#cursor.advance(serial)) return; // already seen
    this.#emit(event, payload?.data, payload ?? {});
  }

  #emit(event: string, data: unknown, meta: Record<string, unknown>) {
    for (const cb of [...this.#global]) {
      try {
        cb(event, data, meta);
      } catch (err) {
        console.error(`channel ${this.name} callback for all events threw:`, err);
      }
    }
    for (const cb of [...(this.#bindings.get(event) ?? [])]) {
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
