/**
 * What every protocol's socket shares as a hub subscriber: sends bounded by the socket's
 * queue (a subscriber past it is closed the way its protocol says), runtime-native topic
 * membership, and the drain wait that paces long replays.
 */
import type { Subscriber } from "../hub/hub.ts";
import type { Transport } from "./transport.ts";
import { record } from "../metrics/mod.ts";
import { log } from "../log/mod.ts";
import { REPLAY_LOW_WATER } from "./handler.ts";
import { setImmediate } from "node:timers";

/** See the module comment. Subclasses set `isClosed` when the socket ends. */
export abstract class SubscriberSocket implements Subscriber {
  abstract readonly socketId: string;
  abstract readonly format: string;
  abstract readonly appId: string | undefined;
  protected readonly transport: Transport;
  protected isClosed = false;
  #maxBuffered: number;

  constructor(transport: Transport, maxBufferedBytes: number) {
    this.transport = transport;
    this.#maxBuffered = maxBufferedBytes;
  }

  /** Whether the socket has been closed (by either side). */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Closes a slow subscriber with the protocol's code and reason. */
  protected abstract closeSlowConsumer(): void;

  /** Hub delivery; enforces the send buffer bound (docs/design.md, "Backpressure"). */
  sendEncoded(data: string | Uint8Array): void {
    if (this.isClosed || this.overBuffered()) return;
    this.transport.send(data);
  }

  /**
   * Closes the socket when its queue exceeds the bound; returns whether it did (or is closed).
   * Called on every JS send, and periodically by the socket server for runtime-native fan-out,
   * which queues without passing through JS.
   */
  overBuffered(): boolean {
    if (this.isClosed) return true;
    if (this.transport.bufferedAmount() <= this.#maxBuffered) return false;
    record.slowConsumer();
    log.warn("slow consumer closed", {
      app: this.appId,
      socket_id: this.socketId,
      protocol: this.format,
    });
    this.closeSlowConsumer();
    return true;
  }

  /** Joins a runtime-native topic when the transport has them (see Hub). */
  nativeSubscribe(name: string): void {
    if (!this.isClosed) this.transport.subscribe?.(name);
  }

  /** Leaves a runtime-native topic. */
  nativeUnsubscribe(name: string): void {
    if (!this.isClosed) this.transport.unsubscribe?.(name);
  }

  /** Publishes to a runtime-native topic, skipping this socket. */
  nativePublish(name: string, data: string | Uint8Array): void {
    if (!this.isClosed) this.transport.publish?.(name, data);
  }

  /** Runs `fn`, its sends gathered into one network write where the runtime can (a join's
   * `corked`). */
  protected corked(fn: () => void): void {
    if (this.transport.cork && !this.isClosed) this.transport.cork(fn);
    else fn();
  }

  /**
   * Resolves true once the queue is down to REPLAY_LOW_WATER, or false as soon as `live()`
   * turns false or the socket closes (a join's `drained`). It first yields a turn of the event
   * loop, so what a replay has pushed so far goes out (and the client reads it) while the
   * replay reads its next chunk, and other sockets are served in between.
   */
  protected async drainedWhile(live: () => boolean): Promise<boolean> {
    await new Promise((resolve) => setImmediate(resolve));
    while (live() && !this.isClosed) {
      if (this.transport.bufferedAmount() <= REPLAY_LOW_WATER) return true;
      await new Promise((r) => setTimeout(r, 5));
    }
    return false;
  }
}
