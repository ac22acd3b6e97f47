/**
 * The node's connection to NATS: JetStream for the replicated write log (one stream) and its
 * snapshots (an object store), core NATS for the traffic that is not stored
 * (relayed events, presence). Knows nothing about what the bytes mean.
 */
import {
  connect,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
  type ObjectStore,
  type PubAck,
  StorageType,
} from "nats";
import { log } from "../log/mod.ts";

/** Client pings: a server that answers none of `MAX_PINGS_OUT` pings sent `PING_MS` apart is
 * left for another one from `--nats` (a frozen server is noticed in a few seconds, not the
 * client's default two minutes). */
const PING_MS = 1000;
const MAX_PINGS_OUT = 3;
/** How long one dial (TCP plus the server's greeting) may take before the next server. */
const DIAL_MS = 2000;
/** How long a suspected server has to answer a ping before the connection moves on (a
 * loaded healthy server, e.g. the stream's leader while a replica catches up, answered in
 * more than 1.5 s in the nemesis: nodes then left it for nothing, twice in a row). */
const SUSPECT_RTT_MS = 2500;

/** The JetStream stream holding every replicated write, and its one subject. */
export const LOG_STREAM = "SWITCHBOARD";
const LOG_SUBJECT = "sb.log";

/** How an append ended: stored at `seq` (or found already stored there under its message id),
 * or unknown (timeout, no leader, connection lost). */
export type AppendOutcome =
  | { kind: "stored"; seq: number; duplicate: boolean }
  | { kind: "unknown"; error: string };

/** See the module comment. */
export class ClusterLink {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly nodeId: string;
  #maxPayload: number;
  #replicas: number;
  #suspecting = false;

  private constructor(nc: NatsConnection, jsm: JetStreamManager, nodeId: string, replicas: number) {
    this.nc = nc;
    this.#replicas = replicas;
    this.#maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    this.jsm = jsm;
    this.js = nc.jetstream();
    this.nodeId = nodeId;
  }

  /**
   * Connects to `servers` (reconnecting for ever), waits up to `waitMs` for JetStream, and
   * creates the log stream when missing: file storage, 3 replicas on a NATS cluster (1 on a
   * single server), everything kept.
   */
  static async open(servers: string[], nodeId: string, waitMs = 30_000): Promise<ClusterLink> {
    const deadline = Date.now() + waitMs;
    const nc = await connect({
      servers,
      name: `switchboard-${nodeId}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      waitOnFirstConnect: true,
      timeout: DIAL_MS,
      pingInterval: PING_MS,
      maxPingOut: MAX_PINGS_OUT,
    });
    let lastError: unknown;
    while (Date.now() < deadline) {
      try {
        const jsm = await nc.jetstreamManager({ timeout: 2000 });
        const replicas = nc.info?.cluster ? 3 : 1;
        try {
          await jsm.streams.info(LOG_STREAM);
        } catch {
          await jsm.streams.add({
            name: LOG_STREAM,
            subjects: [LOG_SUBJECT],
            num_replicas: replicas,
            duplicate_window: 120_000_000_000,
          });
        }
        return new ClusterLink(nc, jsm, nodeId, replicas);
      } catch (err) {
        lastError = err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    await nc.close();
    throw new Error(`NATS JetStream not usable at ${servers.join(",")}: ${String(lastError)}`);
  }

  /** The largest message the servers take (as of the last connection: while reconnecting
   * the connection has no server info). */
  get maxPayload(): number {
    const now = this.nc.info?.max_payload;
    if (now) this.#maxPayload = now;
    return this.#maxPayload;
  }

  /**
   * Appends `data` to the log. Its message id makes a retry idempotent: within the stream's
   * duplicate window (2 minutes) JetStream stores it once and answers a retry with its position.
   */
  async append(data: Uint8Array, msgId: string, timeoutMs: number): Promise<AppendOutcome> {
    let ack: PubAck;
    try {
      ack = await this.js.publish(LOG_SUBJECT, data, { msgID: msgId, timeout: Math.max(100, timeoutMs) });
    } catch (err) {
      return { kind: "unknown", error: err instanceof Error ? err.message : String(err) };
    }
    return { kind: "stored", seq: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * Called when a request went unanswered: when the server does not answer a ping within
   * `SUSPECT_RTT_MS` either (frozen, cut off), the connection moves to another server from
   * `--nats` at once, without waiting for the ping timer. A server that answers stays (the
   * stream's leader is elsewhere, or it is electing one).
   */
  suspect(): void {
    if (this.#suspecting || !this.connected()) return;
    this.#suspecting = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), SUSPECT_RTT_MS)));
    void Promise.race([this.nc.rtt().then(() => "ok" as const, () => "timeout" as const), timedOut])
      .then(async (answer) => {
        clearTimeout(timer);
        if (answer === "timeout" && this.connected()) {
          log.warn("cluster NATS server does not answer; moving to another", { server: this.nc.getServer() });
          await this.nc.reconnect().catch(() => {});
        }
      })
      .finally(() => {
        // At most one move per ping window: the new server gets time to answer.
        setTimeout(() => (this.#suspecting = false), SUSPECT_RTT_MS);
      });
  }

  /** The stored message at `seq`, or null when there is none (yet). */
  async read(seq: number): Promise<Uint8Array | null> {
    try {
      const m = await this.jsm.streams.getMessage(LOG_STREAM, { seq });
      return m.data;
    } catch (err) {
      const code = (err as { api_error?: { err_code?: number } }).api_error?.err_code;
      if (code === 10037) return null; // no message found
      throw err;
    }
  }

  /** The log's first position still stored (later than 1 once compacted) and its last. */
  async bounds(): Promise<{ first: number; last: number }> {
    const { state } = await this.jsm.streams.info(LOG_STREAM);
    return { first: state.first_seq, last: state.last_seq };
  }

  /** The log's last position. */
  async lastSeq(): Promise<number> {
    return (await this.bounds()).last;
  }

  /** Removes the log's messages before position `below` (compaction). */
  async purge(below: number): Promise<void> {
    await this.jsm.streams.purge(LOG_STREAM, { seq: below });
  }

  /** The JetStream object store `bucket`, created when missing with the log's replicas. */
  objectStore(bucket: string): Promise<ObjectStore> {
    return this.js.views.os(bucket, { replicas: this.#replicas, storage: StorageType.File });
  }

  /**
   * Delivers every log message from `start` on, in order, to `fn` until `stop()`; the
   * ordered consumer re-creates itself after gaps and reconnects.
   */
  follow(start: number, fn: (seq: number, data: Uint8Array) => void): { stop(): void } {
    let stopped = false;
    let messages: { stop(): void } | undefined;
    const run = async () => {
      while (!stopped) {
        try {
          const consumer = await this.js.consumers.get(LOG_STREAM, {
            deliver_policy: DeliverPolicy.StartSequence,
            opt_start_seq: start,
          });
          // Heartbeats every 2 s: a consumer whose server froze is re-created within seconds.
          const iter = await consumer.consume({ max_messages: 512, expires: 4000 });
          messages = iter;
          for await (const m of iter) {
            if (stopped) break;
            start = m.seq + 1;
            fn(m.seq, m.data);
          }
        } catch (err) {
          if (!stopped) log.warn("cluster log consumer restarting", { error: String(err) });
        }
        if (!stopped) await new Promise((r) => setTimeout(r, 250));
      }
    };
    void run();
    return {
      stop() {
        stopped = true;
        messages?.stop();
      },
    };
  }

  /** Publishes on core NATS (no storage, at most once). */
  publish(subject: string, data: Uint8Array): void {
    if (!this.nc.isClosed()) this.nc.publish(subject, data);
  }

  /** Subscribes on core NATS; returns the unsubscribe. */
  subscribe(subject: string, fn: (data: Uint8Array, subject: string) => void): () => void {
    const sub = this.nc.subscribe(subject, { callback: (err, m) => !err && fn(m.data, m.subject) });
    return () => sub.unsubscribe();
  }

  /** True while connected to a NATS server. */
  connected(): boolean {
    const protocol = (this.nc as unknown as { protocol?: { connected?: boolean } }).protocol;
    return !this.nc.isClosed() && protocol?.connected === true;
  }

  /** Closes the connection after flushing. */
  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    await this.nc.drain().catch(() => this.nc.close());
  }
}
