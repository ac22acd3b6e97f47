/**
 * One WebSocket speaking Pusher protocol 7: the handshake, ping/pong, `pusher:subscribe` /
 * `unsubscribe` with Pusher's channel signatures, presence, `pusher:signin`, and `client-*`
 * events. Joins go through the same channel join as Phoenix sockets (`enterChannel`), so a
 * Pusher subscriber gets the same serials in the same order, and `after_serial` in
 * `pusher:subscribe` (a Switchboard extension) replays exactly what it missed.
 */
import type { App } from "../config/apps.ts";
import type { Hub } from "../hub/hub.ts";
import { record } from "../metrics/mod.ts";
import { tap, tapActive } from "../debug/tap.ts";
import { errorFields, log } from "../log/mod.ts";
import { enterChannel, leavePresence } from "../pubsub/channel.ts";
import { admitMember, capMembers } from "../pubsub/app_limits.ts";
import { channelKind } from "../pubsub/names.ts";
import type { PresenceMember } from "../pubsub/presence.ts";
import type { ChannelService, StoredEvent } from "../pubsub/service.ts";
import type { Transport } from "../socket/transport.ts";
import type { LiveSocket } from "../socket/endpoint.ts";
import type { JoinContext } from "../socket/handler.ts";
import { SubscriberSocket } from "../socket/subscriber_socket.ts";
import { newSocketId } from "../socket/connection.ts";
import { ChurnLimit, JOIN_RATE } from "../socket/churn.ts";
import { StorageUnavailableError } from "../store/errors.ts";
import { isRefusal, type Topic } from "../streams/mod.ts";
import { clientEventRefusal } from "./client_event.ts";
import { objectOf, parseInbound } from "./inbound.ts";
import { checkSignin } from "./signin.ts";
import { checkSubscription } from "./subscription.ts";
import {
  encodeForPusher,
  errorMessage,
  message,
  PUSHER_FORMAT,
  SERVER_TO_USER,
  userTopic,
} from "./wire.ts";

/** Why a socket is refused right after it opened (Pusher's codes); endpoint.ts decides it. */
export interface Refusal {
  code: number;
  message: string;
}

/** What every Pusher connection shares. */
export interface PusherDeps {
  svc: ChannelService;
  hub: Hub;
  maxBufferedBytes: number;
  /** `activity_timeout` told to clients; the server pings after this much silence. */
  activitySeconds: number;
  users: {
    signedIn(app: App, userId: string, conn: PusherConnection): void;
    signedOut(app: App, userId: string, conn: PusherConnection): void;
  };
}

/** One subscription of this socket. */
interface Subscription {
  topic: Topic;
  member?: PresenceMember;
  /** False once unsubscribed or replaced; a late join result is then discarded. */
  live: boolean;
  /** The `#server-to-user-{id}` channel, delivered while signed in (not by this entry). */
  user?: boolean;
}

/** The longest wait for a `pusher:pong` after the server's ping (Pusher's 30 s). */
const PONG_WAIT_MS = 30_000;
/** The subscription error of a subscribe over the socket's churn bound. */
const JOIN_RATE_ERROR =
  `Rate limit exceeded: more than ${JOIN_RATE} subscribe and unsubscribe per second on this connection`;

/** Close code and reason for a subscriber whose queue went over the bound (clients back off). */
export const PUSHER_SLOW_CONSUMER = {
  code: 4100,
  reason: "slow consumer: send buffer limit exceeded",
};

/** See the module comment. */
export class PusherConnection extends SubscriberSocket implements LiveSocket {
  readonly socketId = newSocketId();
  readonly format = PUSHER_FORMAT;
  readonly appId: string | undefined;
  lastSeen = Date.now();
  #app: App;
  #deps: PusherDeps;
  #subs = new Map<string, Subscription>();
  /** Subscribe/unsubscribe churn bound (lib/socket/churn.ts). */
  #churn = new ChurnLimit();
  #user?: string;
  /** The hub topic of the signed-in user's `#server-to-user-{id}` deliveries. */
  #userTopic?: Topic;
  #pingSentAt?: number;
  /** Closes the socket with 4009 at the app's `user_authentication_timeout` unless authorized. */
  #authTimer?: ReturnType<typeof setTimeout>;
  /** Signed in, or subscribed to a private or presence channel at least once. */
  #authorized = false;

  constructor(
    app: App | undefined,
    refusal: Refusal | undefined,
    transport: Transport,
    deps: PusherDeps,
  ) {
    super(transport, deps.maxBufferedBytes);
    this.#deps = deps;
    this.#app = app!;
    this.appId = refusal ? undefined : app?.id;
    if (!app || refusal) {
      this.isClosed = true;
      transport.send(errorMessage(refusal!.code, refusal!.message));
      transport.close(refusal!.code, refusal!.message);
      return;
    }
    deps.hub.attach(this);
    record.connection(1, "pusher");
    const limit = app.user_authentication_timeout;
    if (limit !== undefined) {
      this.#authTimer = setTimeout(() => {
        if (!this.#authorized) {
          this.fail(
            4009,
            `Connection not authorized within ${limit} seconds: use pusher:signin or subscribe to a private or presence channel`,
          );
        }
      }, limit * 1000);
    }
    this.#send(message("pusher:connection_established", {
      socket_id: this.socketId,
      activity_timeout: deps.activitySeconds,
    }));
  }

  /** Closes a slow subscriber with 4100, so Pusher clients back off and return. */
  protected closeSlowConsumer(): void {
    this.fail(PUSHER_SLOW_CONSUMER.code, PUSHER_SLOW_CONSUMER.reason);
  }

  /** Pings after `activity_timeout` of silence; closes with 4201 when no pong follows. */
  sweep(now: number): void {
    const activityMs = this.#deps.activitySeconds * 1000;
    if (this.#pingSentAt === undefined) {
      if (now - this.lastSeen >= activityMs) {
        this.#pingSentAt = now;
        this.#send(message("pusher:ping", {}));
      }
    } else if (now - this.#pingSentAt >= Math.min(PONG_WAIT_MS, activityMs / 2)) {
      this.fail(4201, "Pong reply not received");
    }
  }

  /** Server shutdown: 4200 tells Pusher clients to reconnect at once. */
  goingAway(): void {
    this.fail(4200, "Server shutting down: reconnect");
  }

  /** Sends `pusher:error` with `code` and closes the socket with it. */
  fail(code: number, text: string): void {
    if (this.isClosed) return;
    this.#send(errorMessage(code, text));
    this.close(code, text);
  }

  /** Closes the socket and ends every subscription. */
  close(code = 1000, reason = ""): void {
    if (this.isClosed) return;
    this.#ended();
    try {
      this.transport.close(code, reason);
    } catch { /* already closed */ }
  }

  /** Called by the runtime when the peer went away. */
  onTransportClosed(): void {
    if (!this.isClosed) this.#ended();
  }

  /** Handles one inbound message. Never throws. */
  receive(raw: string | Uint8Array): void {
    this.lastSeen = Date.now();
    this.#pingSentAt = undefined;
    if (this.isClosed) return;
    const msg = parseInbound(raw);
    if (typeof msg === "string") return this.#send(errorMessage(null, msg));
    const data = msg.data;
    try {
      switch (msg.event) {
        case "pusher:ping":
          return this.#send(message("pusher:pong", {}));
        case "pusher:pong":
          return;
        case "pusher:subscribe":
          if (!this.#churn.take()) {
            return this.#subscriptionError(
              String(objectOf(data).channel ?? ""),
              "LimitReached",
              429,
              JOIN_RATE_ERROR,
            );
          }
          return void this.#subscribe(objectOf(data));
        case "pusher:unsubscribe":
          this.#churn.take(); // counted, always honoured
          return this.#unsubscribe(String(objectOf(data).channel ?? ""));
        case "pusher:signin":
          return this.#signin(objectOf(data));
      }
      if (msg.event.startsWith("client-")) {
        return void this.#clientEvent(msg.event, msg.channel, data);
      }
      this.#send(errorMessage(null, `Unknown event ${JSON.stringify(msg.event.slice(0, 200))}`));
    } catch (err) {
      log.error("pusher message failed", { event: msg.event.slice(0, 200), ...errorFields(err) });
      this.#send(errorMessage(null, "internal error"));
    }
  }

  #ended() {
    this.isClosed = true;
    clearTimeout(this.#authTimer);
    this.#deps.hub.detach(this);
    record.connection(-1, "pusher");
    for (const name of [...this.#subs.keys()]) this.#unsubscribe(name);
    this.#signOut();
  }

  async #subscribe(data: Record<string, unknown>) {
    const name = data.channel;
    if (typeof name !== "string" || name === "") {
      return this.#send(errorMessage(null, "pusher:subscribe needs a channel"));
    }
    this.#unsubscribe(name);
    if (name.startsWith(SERVER_TO_USER)) return this.#subscribeUser(name);
    const app = this.#app;
    const checked = checkSubscription(app, this.socketId, name, data, this.#user !== undefined);
    if ("error" in checked) {
      return this.#subscriptionError(name, checked.type, checked.status, checked.error);
    }
    const member = checked.member;
    const svc = this.#deps.svc;
    const from = svc.streams.position(data);
    if (isRefusal(from)) return this.#subscriptionError(name, "InvalidRequest", 400, from.error);

    const topic = svc.topic(app, name);
    let release = () => {};
    if (member) {
      const admitted = admitMember(svc, app, topic, member.user_id);
      if (typeof admitted !== "function") {
        return this.#subscriptionError(
          name,
          "LimitReached",
          4100,
          `Presence channel has reached its limit of ${admitted.max} members (max_presence_members_per_channel)`,
        );
      }
      release = admitted;
    }
    const sub: Subscription = { topic, member, live: true };
    this.#subs.set(name, sub);
    const ctx = this.#joinContext(topic, sub, from !== undefined);
    let joined: boolean;
    try {
      joined = await enterChannel(svc, ctx, { member, from }).finally(release);
    } catch (err) {
      if (this.#subs.get(name) === sub) this.#unsubscribe(name);
      if (!(err instanceof StorageUnavailableError)) {
        log.error("pusher subscribe crashed", { ...errorFields(err) });
      }
      record.join(topic.product, "join crashed");
      return this.#subscriptionError(name, "InternalError", 503, "subscription failed; retry");
    }
    if (!joined || !sub.live) {
      if (member && !sub.live) leavePresence(svc, topic, member, this.socketId);
      return;
    }
    const kind = channelKind(name);
    if (kind === "private" || kind === "presence") this.#authorize();
    record.join(topic.product);
    if (tapActive) {
      tap(app.key, "join", { topic: topic.key, socket_id: this.socketId, outcome: "ok" });
    }
  }

  /**
   * The join as the channel join sees it: replay pushes, the reply, live delivery. On a cache
   * channel the reply is followed, in the same turn, by the cached event or
   * `pusher:cache_miss` (not on a resume with `after_serial`: the replay is the catch-up).
   */
  #joinContext(topic: Topic, sub: Subscription, resuming: boolean): JoinContext {
    const name = topic.name;
    let replied = false;
    return {
      app: this.#app,
      topic,
      params: {},
      socketId: this.socketId,
      verify: () => Promise.resolve(null),
      push: (event, payload) => {
        if (!sub.live) return;
        const bytes = encodeForPusher([null, null, topic.key, event, payload], topic);
        if (bytes !== null) this.#send(bytes);
      },
      accept: (response = {}) => {
        if (replied || !sub.live) return;
        replied = true;
        const r = response as Record<string, unknown> & {
          presence?: { members: PresenceMember[]; count: number };
        };
        const data = r.presence
          ? { presence: presenceData(capMembers(this.#app, r.presence.members)) }
          : {};
        const extra: Record<string, unknown> = { serial: r.serial, epoch: r.epoch };
        if (r.replay !== undefined) {
          Object.assign(extra, { replay: r.replay, first_serial: r.first_serial });
        }
        this.#send(message("pusher_internal:subscription_succeeded", data, name, extra));
        if (!("cache" in r) || resuming) return;
        const cache = r.cache as { event: string; payload: unknown } | null;
        const cached = cache &&
          encodeForPusher([null, null, topic.key, cache.event, cache.payload], topic);
        // As Pusher sends it: event and channel, no `data`.
        this.#send(cached || JSON.stringify({ event: "pusher:cache_miss", channel: name }));
      },
      subscribe: (t = topic) => {
        if (sub.live && !this.isClosed) this.#deps.hub.subscribe(t, this);
      },
      unsubscribe: (t = topic) => this.#deps.hub.unsubscribe(t, this),
      close: () => this.#unsubscribe(name),
      buffered: () => this.transport.bufferedAmount(),
      corked: (fn) => this.corked(fn),
      drained: () => this.drainedWhile(() => sub.live),
    };
  }

  #subscribeUser(name: string) {
    const userId = name.slice(SERVER_TO_USER.length);
    if (this.#user === undefined || this.#user !== userId) {
      return this.#subscriptionError(
        name,
        "AuthError",
        401,
        "Only the signed-in user may subscribe to its own channel",
      );
    }
    // Delivery already runs since pusher:signin_success (see #signin): nothing to subscribe.
    this.#subs.set(name, { topic: userTopic(this.#app.key, userId), live: true, user: true });
    this.#send(message("pusher_internal:subscription_succeeded", {}, name));
  }

  #unsubscribe(name: string) {
    const sub = this.#subs.get(name);
    if (!sub) return;
    this.#subs.delete(name);
    sub.live = false;
    if (!sub.user) this.#deps.hub.unsubscribe(sub.topic, this);
    if (sub.member) leavePresence(this.#deps.svc, sub.topic, sub.member, this.socketId);
  }

  #signin(data: Record<string, unknown>) {
    const signin = checkSignin(this.#app, this.socketId, data);
    if ("error" in signin) return this.fail(4009, signin.error);
    const { id, userData } = signin;
    this.#signOut();
    this.#user = id;
    this.#authorize();
    this.#deps.users.signedIn(this.#app, id, this);
    // The user's events reach this socket from signin_success on, whether or not the client
    // subscribes to #server-to-user-{id} (pusher-js does so a moment later).
    this.#userTopic = userTopic(this.#app.key, id);
    this.#deps.hub.subscribe(this.#userTopic, this);
    this.#send(message("pusher:signin_success", { user_data: userData }));
  }

  /** Ends the current sign-in, if any: the socket leaves its user's deliveries and the
   * endpoint's list (on a new sign-in and on close). */
  #signOut() {
    if (this.#user === undefined) return;
    this.#deps.users.signedOut(this.#app, this.#user, this);
    this.#deps.hub.unsubscribe(this.#userTopic!, this);
    this.#subs.delete(SERVER_TO_USER + this.#user);
    this.#user = this.#userTopic = undefined;
  }

  async #clientEvent(event: string, channel: unknown, data: unknown) {
    const app = this.#app;
    const name = typeof channel === "string" ? channel : "";
    const sub = this.#subs.get(name);
    if (!sub?.live) {
      return this.#send(
        errorMessage(
          null,
          `Client event rejected: not subscribed to ${JSON.stringify(name.slice(0, 200))}`,
        ),
      );
    }
    const refused = clientEventRefusal(app, name, event, data);
    if (refused) return this.#send(errorMessage(refused.code, refused.message));
    if (!this.#deps.svc.clientLimiter.take(app.id, app.max_client_events_per_sec)) {
      return this.#send(errorMessage(4301, "Client event rejected due to rate limit"));
    }
    const userId = sub.member?.user_id ?? this.#user;
    const stored: StoredEvent = { event, data: data ?? null, socket_id: this.socketId };
    if (userId !== undefined) stored.client_id = userId;
    try {
      // Pusher does not echo a client event to its sender.
      await this.#deps.svc.publishClient(app, name, stored, this.socketId);
    } catch (err) {
      const reason = err instanceof StorageUnavailableError ? err.reason : "internal error";
      if (!(err instanceof StorageUnavailableError)) {
        log.error("pusher client event failed", errorFields(err));
      }
      return this.#send(errorMessage(null, `Client event rejected: ${reason}`));
    }
  }

  /** Signed in or subscribed to an authorized channel: `user_authentication_timeout` is met. */
  #authorize() {
    this.#authorized = true;
    clearTimeout(this.#authTimer);
  }

  #subscriptionError(channel: string, type: string, status: number, error: string) {
    const topic = this.#deps.svc.topic(this.#app, channel);
    record.join(topic.product, error);
    if (tapActive) {
      tap(this.#app.key, "join", { topic: topic.key, socket_id: this.socketId, outcome: error });
    }
    this.#send(message("pusher:subscription_error", { type, error, status }, channel));
  }

  #send(text: string) {
    if (!this.isClosed) this.transport.send(text);
  }
}

/** Pusher's presence block of `subscription_succeeded`. */
function presenceData(members: PresenceMember[]) {
  const hash: Record<string, unknown> = {};
  for (const m of members) hash[m.user_id] = m.user_info ?? null;
  return { ids: members.map((m) => m.user_id), hash, count: members.length };
}
