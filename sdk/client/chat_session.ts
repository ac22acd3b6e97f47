/**
 * ChatSession: one joined thread. Owns the phoenix channel, feeds every frame to the view in
 * wire order, and after a connection loss rejoins with `after_log_id = view.logId` and a
 * fresh token (tokens are bound to the socket id, which changes on reconnect).
 */
import type { ChatAuthOptions } from "./chat_auth.ts";
import { hasTokenSource, resolveToken } from "./chat_auth.ts";
import type { Channel, Socket } from "phoenix";
import type { ChatEventHandler, ChatEvents, PushReply, ThreadSnapshot } from "./chat_types.ts";
import { ChatView, type ViewTransport } from "./chat_view.ts";
import { Topic } from "../shared/topic.ts";

/** The part of ChatClient a session uses. */
export interface SessionHost {
  readonly appKey: string;
  readonly socket: Socket;
  readonly auth: ChatAuthOptions;
  /** Resolves with the socket id of connection number > `afterConnection`. */
  socketIdAfter(afterConnection: number): Promise<{ socketId: string; connection: number }>;
  /** Current connection number (0 before the first `connected` frame). Not a stream epoch:
   * the thread's `epoch` is the view's. */
  readonly connection: number;
  readonly socketId: string | null;
  rejoinDelay(tries: number): number;
}

/** Join parameters that identify the member (human or agent). */
export type JoinIdentity =
  | { kind: "client"; clientId: string }
  | { kind: "agent"; secret: string; agentId: string };

/** An error reply from the server; `reason` is the spec's reason string. */
export class ChatPushError extends Error {
  /** `reason` (the spec's string), and a longer message when there is more to say. */
  constructor(readonly reason: string, message: string = reason) {
    super(message);
    this.name = "ChatPushError";
  }
}

const PUSH_TIMEOUT_MS = 10_000;

/** One joined chat thread (spec "ChatSession"). */
export class ChatSession implements ViewTransport {
  readonly threadId: string;
  readonly appKey: string;
  readonly view: ChatView;
  #host: SessionHost;
  #who: JoinIdentity;
  #channel: Channel | null = null;
  #closed = false;
  /** Connection number of the current join. */
  #connection = 0;
  #clientId: string;

  constructor(host: SessionHost, threadId: string, who: JoinIdentity, afterLogId?: number) {
    this.#host = host;
    this.threadId = threadId;
    this.appKey = host.appKey;
    this.#who = who;
    this.#clientId = who.kind === "client" ? who.clientId : who.agentId;
    this.view = new ChatView(this);
    this.#afterLogId = afterLogId;
  }

  #afterLogId: number | undefined;

  /** The client id the server bound to this member. */
  get clientId(): string {
    return this.#clientId;
  }

  /** Joins for the first time; rejects with the join error reason. */
  async open(): Promise<this> {
    await this.#join(true);
    return this;
  }

  /** Raw push; resolves with the ok response, rejects with ChatPushError. */
  push(event: string, payload: Record<string, unknown> = {}): Promise<PushReply> {
    return this.request(event, payload);
  }

  /** Pushes and waits for the reply (ViewTransport). */
  request(event: string, payload: Record<string, unknown>): Promise<PushReply> {
    const channel = this.#channel;
    if (this.#closed || !channel) return Promise.reject(new ChatPushError("closed"));
    return new Promise((resolve, reject) => {
      channel.push(event, payload, PUSH_TIMEOUT_MS)
        .receive("ok", (r: PushReply) => resolve(r))
        .receive(
          "error",
          (r: { reason?: string }) => reject(new ChatPushError(r?.reason ?? "error")),
        )
        .receive("timeout", () =>
          reject(
            new ChatPushError(
              "timeout",
              `${event} on thread ${this.threadId} timed out: no reply from the server in ${PUSH_TIMEOUT_MS} ms`,
            ),
          ));
    });
  }

  /** Cancels a run. */
  cancel(runId: string): Promise<void> {
    return this.view.cancel(runId);
  }

  /** Registers a view event handler (update, run, run:start, run:end, ...). */
  on<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  on(event: string, cb: (payload: unknown) => void): void;
  on(event: string, cb: (payload: never) => void): void {
    this.view.on(event, cb as (payload: unknown) => void);
  }

  /** Removes a handler. */
  off<E extends keyof ChatEvents>(event: E, cb: ChatEventHandler<E>): void;
  off(event: string, cb: (payload: unknown) => void): void;
  off(event: string, cb: (payload: never) => void): void {
    this.view.off(event, cb as (payload: unknown) => void);
  }

  /** Leaves the thread; no further rejoins. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const ch = this.#channel;
    this.#channel = null;
    if (ch) {
      ch.leave();
      this.#host.socket.remove(ch);
    }
  }

  async #params(first: boolean, socketId: string | null): Promise<Record<string, unknown>> {
    const params: Record<string, unknown> = {};
    if (this.#who.kind === "agent") {
      params.agent_secret = this.#who.secret;
      params.agent_id = this.#who.agentId;
    } else {
      params.client_id = this.#who.clientId;
      if (hasTokenSource(this.#host.auth)) {
        params.auth = await resolveToken(this.#host.auth, {
          socket_id: socketId ?? "",
          thread_id: this.threadId,
          client_id: this.#who.clientId,
        });
      }
    }
    // Where to resume: the view's position (on a first join, the app's `afterLogId`, if any).
    if (first && this.#afterLogId !== undefined) this.view.seek(this.#afterLogId);
    return { ...params, ...this.view.resumeParams() };
  }

  /**
   * Joins on connection number > `afterConnection` (a token is bound to that connection's
   * socket id); a first join uses the current connection.
   */
  async #join(first: boolean, afterConnection = this.#connection): Promise<void> {
    if (first && !this.#host.socket.isConnected()) this.#host.socket.connect();
    const got = await this.#host.socketIdAfter(
      first ? Math.max(0, this.#host.connection - 1) : afterConnection,
    );
    const socketId = got.socketId;
    this.#connection = got.connection;
    if (this.#closed) return;
    const params = await this.#params(first, socketId);
    if (this.#closed) return;
    const ch = this.#host.socket.channel(Topic.of("chat", this.appKey, this.threadId).key, params);
    this.#channel = ch;
    ch.onMessage = (event: string, payload: any, _ref?: unknown) => {
      if (this.#channel === ch && !event.startsWith("phx_") && !event.startsWith("chan_reply_")) {
        if (event === "run:cancel") this.view.emit("run:cancel", payload);
        else this.view.apply(event, payload ?? {});
      }
      return payload;
    };
    ch.onError(() => this.#lost(ch));
    const snapshot = await new Promise<ThreadSnapshot>((resolve, reject) => {
      ch.join()
        .receive("ok", (r: ThreadSnapshot) => resolve(r))
        .receive(
          "error",
          (r: { reason?: string }) => reject(new ChatPushError(r?.reason ?? "join failed")),
        )
        .receive("timeout", () =>
          reject(
            new ChatPushError(
              "timeout",
              `join of thread ${this.threadId} timed out: no reply from the server in ${
                (this.#host.socket as unknown as { timeout: number }).timeout
              } ms`,
            ),
          ));
    }).catch((err) => {
      this.#drop(ch);
      throw err;
    });
    if (this.#channel !== ch) return;
    if (snapshot.client_id) this.#clientId = snapshot.client_id;
    this.view.applySnapshot(snapshot, first);
    this.view.emit("joined", { logId: this.view.logId, rejoin: !first });
  }

  /** Stops phoenix from rejoining this channel on its own (we rejoin with fresh params). */
  #drop(ch: Channel): void {
    (ch as unknown as { rejoinTimer?: { reset?(): void } }).rejoinTimer?.reset?.();
    this.#host.socket.remove(ch);
    if (this.#channel === ch) this.#channel = null;
  }

  #lost(ch: Channel): void {
    if (this.#closed || this.#channel !== ch) return;
    // Socket still up (a channel error): rejoin on it; else wait for the next connection.
    const sameSocket = !!this.#host.socket.isConnected();
    this.#drop(ch);
    this.view.emit("disconnected", {});
    void this.#rejoinLoop(sameSocket ? this.#connection - 1 : this.#connection);
  }

  async #rejoinLoop(afterConnection: number): Promise<void> {
    for (let tries = 1; !this.#closed; tries++) {
      try {
        await this.#join(false, afterConnection);
        return;
      } catch (err) {
        this.view.emit("error", err);
        if ((err as { fatal?: unknown }).fatal === true) return; // refused: no more rejoins
        await new Promise((r) => setTimeout(r, this.#host.rejoinDelay(tries)));
      }
    }
  }
}
