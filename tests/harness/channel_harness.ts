// In-process channel harness: the products built as the server builds them (real `OrderedLog`s
// on a real LMDB store in a temp dir, a real `Hub`), joined through a fake `JoinContext` that
// records what the socket layer would send, in the spirit of Phoenix's `subscribe_and_join` /
// `assert_push`. The Pusher face is built too: its REST routes answer through `http` /
// `pusherRest`, and `pusherSocket` opens a Pusher protocol connection over a fake transport
// that records the messages it would send. No process, no socket: a join, replay, purge or
// reset test runs in milliseconds. What needs a process (frames on the wire, signals, the binary) stays in
// tests/e2e/.
import assert from "node:assert/strict";
import { join as joinPath } from "node:path";
import { type App, APP_DEFAULTS, AppRegistry } from "../../lib/config/apps.ts";
import { parseConfig } from "../../lib/config/config.ts";
import { Hub, type Subscriber } from "../../lib/hub/hub.ts";
import { verifyToken } from "../../lib/auth/verify.ts";
import type { ProductDeps, ProductModule } from "../../lib/product.ts";
import type { ChannelHandler, ChannelInstance, PushReply } from "../../lib/socket/handler.ts";
import { parseTopic } from "../../lib/socket/topics.ts";
import type { Topic } from "../../lib/wire/topic.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { createObjects } from "../../lib/objects/mod.ts";
import { createPubsub } from "../../lib/pubsub/mod.ts";
import { createChat } from "../../lib/chat/mod.ts";
import { createSpaces } from "../../lib/spaces/mod.ts";
import { createPusher } from "../../lib/pusher/mod.ts";
import { PusherSockets } from "../../lib/pusher/endpoint.ts";
import { hmacHex, md5Hex } from "../../lib/pusher/signature.ts";
import type { LiveSocket } from "../../lib/socket/endpoint.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { NATIVE, RouteSurfaces } from "../../lib/http/surfaces.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { Hono } from "hono";

/** The apps every harness serves: the same as tests/helpers/server.ts's `APPS`. */
export const HARNESS_APPS: App[] = [
  { id: "app-1", key: "key1", secret: "secret1", ...APP_DEFAULTS },
  { id: "app-2", key: "key2", secret: "secret2", ...APP_DEFAULTS, enable_user_authentication: 1 },
];

/** One thing a member got, in order: a push before or after the reply, the reply, a live event. */
export type Received =
  | { kind: "push"; event: string; payload: any }
  | { kind: "reply"; status: "ok" | "error"; response: any }
  | { kind: "live"; event: string; payload: any }
  | { kind: "close"; reason?: string };

let sockets = 0;

/** Join params as a client sends them. */
export type JoinParams = Record<string, unknown>;

/** One joined (or refused) member: what it received, and its channel instance. */
export class Member implements Subscriber {
  readonly socketId: string;
  readonly format = "json";
  readonly topic: string;
  /** Everything received, in order (the reply included). */
  readonly received: Received[] = [];
  instance?: ChannelInstance;
  live = true;
  #waiters: (() => void)[] = [];
  #hubTopics = new Map<string, Topic>();
  #hub: Hub;

  constructor(hub: Hub, topic: string) {
    this.#hub = hub;
    this.topic = topic;
    this.socketId = `${++sockets}.${Math.floor(Math.random() * 1e9)}`;
    hub.attach(this); // findable by socket id, for `exclude`
  }

  /** The join reply (the harness waits for it before handing the member out). */
  get reply(): { status: "ok" | "error"; response: any } {
    const r = this.received.find((x) => x.kind === "reply");
    assert.ok(r && r.kind === "reply", "no join reply");
    return r;
  }

  /** The events (pushed or live) named `event`, or all of them, in order. */
  events(event?: string): { event: string; payload: any; kind: "push" | "live" }[] {
    return this.received.filter((r): r is Extract<Received, { kind: "push" | "live" }> =>
      (r.kind === "push" || r.kind === "live") && (event === undefined || r.event === event)
    );
  }

  /** The events pushed before the join reply (the replay), in order. */
  replayed(): { event: string; payload: any }[] {
    const at = this.received.findIndex((r) => r.kind === "reply");
    return this.received.slice(0, at < 0 ? undefined : at).filter((r) => r.kind === "push") as any;
  }

  /** Waits until an event matching `match` arrives (default 2 s), like Phoenix's `assert_push`. */
  async assertPush(
    event: string,
    match: (payload: any) => boolean = () => true,
    ms = 2000,
  ): Promise<any> {
    const found = () => this.events(event).find((e) => match(e.payload));
    const deadline = Date.now() + ms;
    while (!found()) {
      const left = deadline - Date.now();
      if (left <= 0) {
        assert.fail(`no ${event} push matched; received ${JSON.stringify(this.received)}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return found()!.payload;
  }

  /** Sends a client push to the channel instance and returns its reply. */
  async push(event: string, payload: Record<string, unknown>): Promise<PushReply> {
    assert.ok(this.instance?.handleIn, "the member has no push handler");
    return await this.instance.handleIn(event, payload);
  }

  /** Leaves (`phx_leave`) or closes the socket (`close`): unsubscribes and tells the
   * instance, as the socket layer does. */
  leave(why: "leave" | "close" = "leave"): void {
    if (!this.live) return;
    this.live = false;
    for (const t of this.#hubTopics.values()) this.#hub.unsubscribe(t, this);
    this.#hubTopics.clear();
    this.#hub.detach(this);
    this.instance?.terminate?.(why);
  }

  /** @internal */
  record(r: Received): void {
    this.received.push(r);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** @internal */
  subscribeTo(topic: Topic): void {
    this.#hubTopics.set(topic.key, topic);
    this.#hub.subscribe(topic, this);
  }

  /** @internal */
  unsubscribeFrom(topic: Topic): void {
    this.#hubTopics.delete(topic.key);
    this.#hub.unsubscribe(topic, this);
  }

  /** Hub delivery: a broadcast frame `[null, null, topic, event, payload]`. */
  sendEncoded(data: string | Uint8Array): void {
    if (!this.live) return;
    const frame = JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data));
    this.record({ kind: "live", event: frame[3], payload: frame[4] });
  }
}

/** A Pusher message as the connection sends it (`data` as sent: a JSON string or an object). */
export type PusherMessage = {
  event: string;
  channel?: string;
  data?: any;
  [extra: string]: unknown;
};

/** One Pusher protocol connection opened by the harness: what it was sent, in order. */
export class PusherClient {
  /** Every message sent to the client, in order. */
  readonly messages: PusherMessage[] = [];
  /** The close code and reason, once the connection closed the transport. */
  closed?: { code: number; reason: string };
  socket?: LiveSocket;
  #waiters: (() => void)[] = [];
  /** The transport the connection writes to: it records instead of sending. */
  readonly transport = {
    send: (data: string | Uint8Array) => {
      this.messages.push(
        JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data)),
      );
      this.#wake();
    },
    close: (code: number, reason: string) => {
      this.closed ??= { code, reason };
      this.#wake();
    },
    bufferedAmount: () => 0,
  };

  /** Sends a client message (`{event, data, channel}`) as a text frame. */
  send(message: Record<string, unknown>): void {
    this.socket!.receive(JSON.stringify(message));
  }

  /** The socket id from `pusher:connection_established`. */
  get socketId(): string {
    const m = this.messages.find((x) => x.event === "pusher:connection_established");
    assert.ok(m, `not connected: ${JSON.stringify(this.messages)}`);
    return JSON.parse(m.data).socket_id;
  }

  /** Waits until a message named `event` matching `match` arrives (default 2 s). */
  async assertMessage(
    event: string,
    match: (m: PusherMessage) => boolean = () => true,
    ms = 2000,
  ): Promise<PusherMessage> {
    const found = () => this.messages.find((m) => m.event === event && match(m));
    const deadline = Date.now() + ms;
    while (!found()) {
      const left = deadline - Date.now();
      if (left <= 0) {
        assert.fail(`no ${event} message matched; got ${JSON.stringify(this.messages)}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return found()!;
  }

  /** The peer goes away, as when the client disconnects. */
  close(): void {
    if (this.socket && !this.socket.closed) this.socket.onTransportClosed();
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

/** The products of one harness, built over one store and one hub. */
export class Harness {
  readonly env: StoreEnv;
  readonly hub = new Hub();
  readonly apps: AppRegistry;
  readonly modules: Record<"pubsub" | "objects" | "chat" | "spaces" | "pusher", ProductModule>;
  readonly handlers: Record<string, ChannelHandler>;
  #members: Member[] = [];
  #pusherClients: PusherClient[] = [];
  /** The products' routes mounted as lib/server.ts mounts them (without its request-wide
   * middleware: metrics, body cap, `__proto__` check, CORS). */
  #router = new Hono();

  /** Builds the products; `args` are server flags (e.g. `--history-max-count 5`). */
  constructor(args: string[] = []) {
    const dir = tempDir("sb-harness-");
    const config = parseConfig(["--data-dir", dir, ...args], {});
    this.env = new StoreEnv(joinPath(dir, "switchboard.mdb"));
    this.apps = new AppRegistry(HARNESS_APPS);
    const env = this.env;
    const deps: ProductDeps = {
      config,
      apps: this.apps,
      env,
      hub: this.hub,
      openLog: (name, options) => new OrderedLog(env, name, options),
    };
    const pubsub = createPubsub(deps);
    this.modules = {
      pubsub,
      objects: createObjects(deps),
      chat: createChat(deps),
      spaces: createSpaces(deps),
      // The Pusher face over the same channel service, as lib/server.ts builds it.
      pusher: createPusher(deps, pubsub.service),
    };
    this.handlers = Object.assign({}, ...Object.values(this.modules).map((m) => m.channels ?? {}));
    // Errors answered as the server answers them: in the shape of the matched routes' surface.
    const surfaces = new RouteSurfaces();
    for (const m of Object.values(this.modules)) {
      if (m.routes) surfaces.mount(this.#router, m.routes, m.surface ?? NATIVE);
    }
    this.#router.notFound(() => NATIVE.answer(new ApiError(404)));
    this.#router.onError((err, c) => surfaces.answer(err, c));
  }

  /**
   * Joins `topic` as a socket of app `appKey` would, and resolves once the handler replied
   * (ok or error). The member's `received` holds the replay, the reply, then live events.
   * `params` may be a function of the member's socket id (a token names the socket).
   */
  async join(
    topic: string,
    params: JoinParams | ((socketId: string) => JoinParams | Promise<JoinParams>) = {},
    appKey = "key1",
  ): Promise<Member> {
    const app = this.apps.byKey(appKey)!;
    const member = new Member(this.hub, topic);
    this.#members.push(member);
    if (typeof params === "function") params = await params(member.socketId);
    const parsed = parseTopic(topic, app.key, (p) => Object.hasOwn(this.handlers, p));
    if (typeof parsed === "string") {
      member.record({ kind: "reply", status: "error", response: { reason: parsed } });
      return member;
    }
    let replied = false;
    const outcome = await this.handlers[parsed.product].join({
      app,
      topic: parsed,
      params,
      socketId: member.socketId,
      verify: (token) => verifyToken(app, token, member.socketId),
      push: (event, payload) => {
        if (member.live) member.record({ kind: "push", event, payload: clone(payload) });
      },
      corked: (fn) => fn(),
      accept: (response = {}) => {
        if (replied || !member.live) return;
        replied = true;
        member.record({ kind: "reply", status: "ok", response: clone(response) });
      },
      subscribe: (t = parsed) => {
        if (member.live) member.subscribeTo(t);
      },
      unsubscribe: (t = parsed) => member.unsubscribeFrom(t),
      close: (reason) => {
        member.record({ kind: "close", reason });
        member.leave();
      },
      buffered: () => 0,
      drained: () => Promise.resolve(member.live),
    });
    if ("error" in outcome) {
      member.leave();
      member.record({ kind: "reply", status: "error", response: { reason: outcome.error } });
    } else {
      member.instance = outcome;
      if (!replied) member.record({ kind: "reply", status: "ok", response: {} });
    }
    return member;
  }

  /** An HTTP request to the products' routes, errors answered as the server answers them
   * (credentials of app-1 unless `headers`). */
  async http(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }> {
    const init: RequestInit = {
      method,
      headers: headers ??
        { "x-app-key": "key1", "x-app-secret": "secret1", "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    if (body !== undefined && !(init.headers as Record<string, string>)["content-type"]) {
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    const res = await this.#router.request(`http://harness${path}`, init);
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch { /* a text answer (the Pusher REST API's errors) stays text */ }
    return { status: res.status, body: parsed };
  }

  /** Opens a Pusher protocol connection at `/app/{appKey}` (`query` as a client sends it), as
   * the socket server opens one: decided, then opened over a transport that records what the
   * connection sends (`connection_established` first, or `pusher:error` and a close). */
  pusherSocket(appKey = "key1", query = "protocol=7&client=js&version=8.4.0"): PusherClient {
    const endpoint = this.modules.pusher.endpoints!.find((e) => e instanceof PusherSockets)!;
    const url = new URL(`http://harness/app/${encodeURIComponent(appKey)}?${query}`);
    const decision = endpoint.decide(url, null, () => false);
    assert.ok("accept" in decision, "the Pusher endpoint takes every upgrade");
    const client = new PusherClient();
    client.socket = endpoint.open(decision.accept, client.transport);
    this.#pusherClients.push(client);
    return client;
  }

  /** A Pusher REST request (`/apps/{id}/...`) signed with the app's key and secret, as the
   * `pusher` server library signs it (auth_key, auth_timestamp, auth_version, body_md5). */
  async pusherRest(
    method: string,
    path: string,
    body?: unknown,
    appKey = "key1",
  ): Promise<{ status: number; body: any }> {
    const app = this.apps.byKey(appKey)!;
    const text = body === undefined ? "" : JSON.stringify(body);
    const [pathOnly, given = ""] = path.split("?");
    const query = new URLSearchParams(given);
    query.set("auth_key", app.key);
    query.set("auth_timestamp", String(Math.floor(Date.now() / 1000)));
    query.set("auth_version", "1.0");
    if (text) query.set("body_md5", md5Hex(text));
    const pairs = [...query].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const signed = [method, pathOnly, pairs.map(([k, v]) => `${k}=${v}`).join("&")].join("\n");
    query.set("auth_signature", hmacHex(app.secret, signed));
    const res = await this.#router.request(`http://harness${pathOnly}?${query}`, {
      method,
      headers: text ? { "content-type": "application/json" } : {},
      body: text || undefined,
    });
    const out = await res.text();
    let parsed: any = out;
    try {
      parsed = out === "" ? undefined : JSON.parse(out);
    } catch { /* a text answer stays text */ }
    return { status: res.status, body: parsed };
  }

  /** Leaves every member, closes the products and the store. */
  async close(): Promise<void> {
    for (const c of this.#pusherClients) c.close();
    for (const m of this.#members) m.leave();
    for (const m of Object.values(this.modules)) await m.close?.();
    await this.env.close();
  }
}

/** Opens a harness, runs `fn`, closes it even when `fn` throws. */
export async function withHarness(
  fn: (h: Harness) => Promise<void>,
  args: string[] = [],
): Promise<void> {
  const h = new Harness(args);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** What the wire would carry: a JSON copy (so later mutation of a snapshot does not leak in). */
function clone(value: unknown): any {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
