// One Phoenix V2 WebSocket (`Connection`): frames, heartbeats, joins, leaves, pushes and
// replies, routed to the product handler of each topic's prefix; knows no product.
import type { App } from "../config/apps.ts";
import type { Principal } from "../auth/principal.ts";
import type { Hub } from "../hub/hub.ts";
import { decodeFrame, encodeFrame, type Frame, type WireFormat } from "../wire/codec.ts";
import {
  type ChannelHandler,
  type ChannelInstance,
  isPushRefusal,
  type JoinContext,
  type PushReply,
} from "./handler.ts";
import { SubscriberSocket } from "./subscriber_socket.ts";
import { parseTopic } from "./topics.ts";
import { Topic } from "../wire/topic.ts";
import { ChurnLimit, JOIN_RATE_REASON } from "./churn.ts";
import type { LiveSocket } from "./endpoint.ts";
import { record } from "../metrics/mod.ts";
import { tap, tapActive } from "../debug/tap.ts";
import type { Transport } from "./transport.ts";
import { errorFields, log } from "../log/mod.ts";

export type { Transport } from "./transport.ts";

/** Socket-level services shared by every connection. */
export interface SocketDeps {
  hub: Hub;
  /** Channel handlers by the topic prefix they registered (`durable`, `chat`, ...). */
  handlers: Record<string, ChannelHandler>;
  verify(app: App, token: unknown, socketId: string): Promise<Principal | null>;
  /** Per-socket send buffer bound; a subscriber above it is disconnected. */
  maxBufferedBytes: number;
  /** Clustered mode: resolves null once this node applied a join's `min_position` param (the
   * raw value; one that is not a position is ignored), else the refusal reason when it did not
   * in time. Without it the param is satisfied at once. */
  caughtUp?: (minPosition: unknown) => Promise<string | null>;
}

interface Membership {
  joinRef: string;
  instance?: ChannelInstance;
  hubTopics: Map<string, Topic>;
  /** False once the member left or was replaced; a late join result is then discarded. */
  live: boolean;
}

/** Per-socket send buffer bound before a slow subscriber is disconnected (8 MiB). */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/** Close code and reason used when a subscriber falls behind (documented in protocol.md). */
export const SLOW_CONSUMER = { code: 4008, reason: "slow consumer: send buffer limit exceeded" };

/**
 * One WebSocket speaking Phoenix V2: heartbeats, joins, leaves, pushes and replies. Knows
 * nothing about products; routes each topic to the handler of its product.
 */
export class Connection extends SubscriberSocket implements LiveSocket {
  readonly socketId: string;
  readonly app: App;
  readonly appId: string;
  readonly format: WireFormat;
  lastSeen = Date.now();
  #deps: SocketDeps;
  #members = new Map<string, Membership>();
  /** Join/leave churn bound (churn.ts). */
  #churn = new ChurnLimit();

  constructor(app: App, format: WireFormat, transport: Transport, deps: SocketDeps) {
    super(transport, deps.maxBufferedBytes);
    this.app = app;
    this.appId = app.id;
    this.format = format;
    this.#deps = deps;
    this.socketId = newSocketId();
    deps.hub.attach(this);
    record.connection(1);
    this.#send([null, null, "phoenix", "connected", { socket_id: this.socketId }]);
  }

  /** Closes a slow subscriber with 4008 and the reason. */
  protected closeSlowConsumer(): void {
    this.close(SLOW_CONSUMER.code, SLOW_CONSUMER.reason);
  }

  /** Handles one inbound WebSocket message. Never throws. */
  receive(data: string | Uint8Array): void {
    this.lastSeen = Date.now();
    const decoded = decodeFrame(data, this.format);
    if (typeof decoded === "string") {
      this.#send([null, null, "phoenix", "phx_error", { reason: decoded }]);
      return;
    }
    if (!Array.isArray(decoded)) {
      const [joinRef, ref, topic] = decoded.frame;
      this.#reply(joinRef, ref, topic, { status: "error", response: { reason: decoded.refused } });
      return;
    }
    const frame = decoded;
    const [joinRef, ref, topic, event] = frame;
    const payload = frame[4] as Record<string, unknown>;
    try {
      if (topic === "phoenix" && event === "heartbeat") {
        this.#reply(null, ref, topic, { status: "ok", response: {} });
      } else if (event === "phx_join") {
        if (this.#churn.take()) void this.#join(joinRef ?? ref, ref, topic, payload);
        else {this.#reply(joinRef ?? ref, ref, topic, {
            status: "error",
            response: { reason: JOIN_RATE_REASON },
          });}
      } else if (event === "phx_leave") {
        this.#churn.take(); // counted, always honoured
        this.#leave(topic, "leave");
        this.#reply(joinRef, ref, topic, { status: "ok", response: {} });
      } else {
        this.#push(joinRef, ref, topic, event, payload);
      }
    } catch (err) {
      this.#crash(topic, joinRef, err);
    }
  }

  /** Closes the socket when it has been silent longer than `idleMs` (4000). */
  sweep(now: number, idleMs: number): void {
    if (this.lastSeen < now - idleMs) {
      this.close(4000, `idle timeout: no message for ${idleMs / 1000} s`);
    }
  }

  /** Server shutdown: 1001, so clients reconnect to the next server. */
  goingAway(): void {
    this.close(1001, "server shutting down");
  }

  /** Closes the socket and ends every membership. */
  close(code = 1000, reason = ""): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.#deps.hub.detach(this);
    record.connection(-1);
    for (const topic of [...this.#members.keys()]) this.#leave(topic, "close");
    try {
      this.transport.close(code, reason);
    } catch { /* already closed */ }
  }

  /** Called by the runtime when the peer went away. */
  onTransportClosed(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.#deps.hub.detach(this);
    record.connection(-1);
    for (const topic of [...this.#members.keys()]) this.#leave(topic, "close");
  }

  async #join(
    joinRef: string | null,
    ref: string | null,
    topic: string,
    params: Record<string, unknown>,
  ) {
    const jr = joinRef ?? "0";
    // Read-your-writes across nodes (docs/cluster.md "Reads on other nodes, and
    // read-your-writes"): wait until this node has applied the position the client saw its
    // write at.
    const behind = this.#deps.caughtUp ? await this.#deps.caughtUp(params?.min_position) : null;
    if (behind) {
      return this.#reply(jr, ref, topic, { status: "error", response: { reason: behind } });
    }
    if (this.#members.has(topic)) this.#leave(topic, "rejoin", true);
    if (this.app.enabled === false) {
      record.join(Topic.productOf(topic), "app disabled");
      return this.#reply(jr, ref, topic, { status: "error", response: { reason: "app disabled" } });
    }
    const handlers = this.#deps.handlers;
    const parsed = parseTopic(topic, this.app.key, (prefix) => Object.hasOwn(handlers, prefix));
    if (typeof parsed === "string") {
      return this.#reply(jr, ref, topic, { status: "error", response: { reason: parsed } });
    }
    const handler = handlers[parsed.product];
    const member: Membership = { joinRef: jr, hubTopics: new Map(), live: true };
    this.#members.set(topic, member);
    let replied = false;
    const heads = new Map<string, string>();
    const ctx: JoinContext = {
      app: this.app,
      topic: parsed,
      params,
      socketId: this.socketId,
      verify: (token) => this.#deps.verify(this.app, token, this.socketId),
      push: (event, payload) => {
        if (!member.live || this.isClosed) return;
        // Replays push many frames of one topic: JSON frames reuse their encoded head.
        if (this.format !== "json") return this.#send([jr, null, topic, event, payload]);
        let head = heads.get(event);
        if (head === undefined) {
          heads.set(event, head = JSON.stringify([jr, null, topic, event]).slice(0, -1));
        }
        this.transport.send(`${head},${JSON.stringify(payload ?? null)}]`);
      },
      accept: (response = {}) => {
        if (replied || !member.live) return;
        replied = true;
        this.#reply(jr, ref, topic, { status: "ok", response });
      },
      subscribe: (t = parsed) => {
        if (!member.live || this.isClosed) return;
        member.hubTopics.set(t.key, t);
        this.#deps.hub.subscribe(t, this);
      },
      unsubscribe: (t = parsed) => {
        member.hubTopics.delete(t.key);
        this.#deps.hub.unsubscribe(t, this);
      },
      close: (reason) => {
        if (!member.live) return;
        this.#leave(topic, "kick");
        this.#send([jr, null, topic, "phx_close", reason ? { reason } : {}]);
      },
      buffered: () => this.transport.bufferedAmount(),
      corked: (fn) => this.corked(fn),
      drained: () => this.drainedWhile(() => member.live),
    };
    let outcome: ChannelInstance | { error: string };
    try {
      outcome = await handler.join(ctx);
    } catch (err) {
      this.#members.delete(topic);
      member.live = false;
      this.#unsubscribeAll(member);
      log.error("join crashed", { topic: brief(topic), ...errorFields(err) });
      record.join(parsed.product, "join crashed");
      return this.#reply(jr, ref, topic, { status: "error", response: { reason: "join crashed" } });
    }
    if ("error" in outcome) {
      if (this.#members.get(topic) === member) this.#members.delete(topic);
      member.live = false;
      this.#unsubscribeAll(member);
      record.join(parsed.product, outcome.error);
      if (tapActive) {
        tap(this.app.key, "join", { topic, socket_id: this.socketId, outcome: outcome.error });
      }
      log.info("join refused", { app: this.app.id, topic: brief(topic), reason: outcome.error });
      return this.#reply(jr, ref, topic, { status: "error", response: { reason: outcome.error } });
    }
    if (!member.live) {
      outcome.terminate?.(this.isClosed ? "close" : "rejoin");
      return;
    }
    member.instance = outcome;
    record.join(parsed.product);
    if (tapActive) tap(this.app.key, "join", { topic, socket_id: this.socketId, outcome: "ok" });
    ctx.accept({});
  }

  /** Handles a push; a synchronous handler's reply is sent without a promise round trip. */
  #push(
    joinRef: string | null,
    ref: string | null,
    topic: string,
    event: string,
    payload: Record<string, unknown>,
  ) {
    const member = this.#members.get(topic);
    if (!member || !member.instance || (joinRef !== null && joinRef !== member.joinRef)) {
      return this.#reply(joinRef, ref, topic, {
        status: "error",
        response: { reason: "unmatched topic" },
      });
    }
    let reply: PushReply | Promise<PushReply>;
    try {
      reply = member.instance.handleIn
        ? member.instance.handleIn(event, payload)
        : { status: "error", response: { reason: "unknown event" } };
    } catch (err) {
      return this.#pushFailed(member.joinRef, ref, topic, err);
    }
    if (reply instanceof Promise) {
      reply.then(
        (r) => this.#answer(member.joinRef, ref, topic, r),
        (err) => this.#pushFailed(member.joinRef, ref, topic, err),
      );
    } else this.#answer(member.joinRef, ref, topic, reply);
  }

  /** Sends a push's reply (none for a push without a ref). */
  #answer(joinRef: string, ref: string | null, topic: string, reply: PushReply) {
    if (reply && ref !== null) this.#reply(joinRef, ref, topic, reply);
  }

  /** A push's handler threw: storage refusing a write is the push's answer, not a crash of the
   * channel; anything else crashes the channel. */
  #pushFailed(joinRef: string, ref: string | null, topic: string, err: unknown) {
    if (!isPushRefusal(err)) return this.#crash(topic, joinRef, err);
    this.#answer(joinRef, ref, topic, { status: "error", response: { reason: err.reason } });
  }

  #leave(topic: string, why: "leave" | "rejoin" | "close" | "kick", notifyOld = false) {
    const member = this.#members.get(topic);
    if (!member) return;
    this.#members.delete(topic);
    member.live = false;
    this.#unsubscribeAll(member);
    if (notifyOld) this.#send([member.joinRef, null, topic, "phx_close", {}]);
    try {
      member.instance?.terminate?.(why);
    } catch (err) {
      log.error("terminate failed", { topic: brief(topic), ...errorFields(err) });
    }
  }

  #crash(topic: string, joinRef: string | null, err: unknown) {
    log.error("channel crashed", { topic: brief(topic), ...errorFields(err) });
    this.#leave(topic, "close");
    this.#send([joinRef, joinRef, topic, "phx_error", {}]);
  }

  #unsubscribeAll(member: Membership) {
    for (const t of member.hubTopics.values()) this.#deps.hub.unsubscribe(t, this);
    member.hubTopics.clear();
  }

  #reply(joinRef: string | null, ref: string | null, topic: string, reply: PushReply) {
    this.#send([joinRef, ref, topic, "phx_reply", reply]);
  }

  #send(frame: Frame) {
    if (this.isClosed) return;
    this.transport.send(encodeFrame(frame, this.format));
  }
}

/** A topic cut to a loggable length (topics can be up to a frame long). */
function brief(topic: string): string {
  return topic.length <= 200 ? topic : `${topic.slice(0, 200)}… (${topic.length} chars)`;
}

let counter = 0;
/**
 * A socket id unique among live sockets of every protocol: random prefix + counter, in
 * Pusher's `123.456` form (the Pusher protocol uses it too).
 */
export function newSocketId(): string {
  counter = (counter + 1) % 1_000_000_000;
  const rand = crypto.getRandomValues(new Uint32Array(1))[0];
  return `${rand}.${counter}`;
}
