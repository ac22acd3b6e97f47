/**
 * The node's connection to NATS: JetStream for the replicated write log (one stream) and its
 * snapshots (an object store), core NATS for the traffic that is not stored (relayed events,
 * presence). Knows nothing about what the bytes mean. Its parts: `jetstream_api.ts` (the
 * requests), `failover.ts` (which server it uses, decided there alone).
 */
import { Buffer } from "node:buffer";
import {
  connect,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
  type ObjectInfo,
  type ObjectStore,
  type ObjectStoreMeta,
  type ObjectStoreOptions,
  StorageType,
} from "nats";
import { log } from "../log/mod.ts";
import { connectOptions, Failover } from "./failover.ts";
import { describe, JetStreamRequests } from "./jetstream_api.ts";
import { putFile } from "./object_put.ts";

export { silentFor } from "./failover.ts";

/** The JetStream stream holding every replicated write, and its one subject. */
export const LOG_STREAM = "SWITCHBOARD";
const LOG_SUBJECT = "sb.log";

/** The log stream's configuration, alike wherever it is made (a node's first start, the
 * operator's refound): file storage, 3 replicas on a NATS cluster (1 on a lone server), a
 * 2-minute duplicate window for the publish retries' message ids. */
export function logStreamConfig(nc: NatsConnection) {
  return {
    name: LOG_STREAM,
    subjects: [LOG_SUBJECT],
    num_replicas: nc.info?.cluster ? 3 : 1,
    duplicate_window: 120_000_000_000,
  };
}

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
  #requests: JetStreamRequests;
  #failover: Failover;

  private constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    nodeId: string,
    replicas: number,
    servers: string[],
  ) {
    this.nc = nc;
    this.jsm = jsm;
    this.js = nc.jetstream();
    this.nodeId = nodeId;
    this.#replicas = replicas;
    this.#maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    this.#requests = new JetStreamRequests(nc, () => this.#failover.seek(LOG_STREAM));
    this.#failover = new Failover(nc, servers, nodeId, this.#requests);
  }

  /**
   * Connects to `servers` (reconnecting for ever), waits up to `waitMs` for JetStream, and
   * creates the log stream when missing (`logStreamConfig`).
   */
  static async open(servers: string[], nodeId: string, waitMs = 30_000): Promise<ClusterLink> {
    const deadline = Date.now() + waitMs;
    const nc = await connect(connectOptions(servers, nodeId));
    let lastError: unknown;
    while (Date.now() < deadline) {
      try {
        const jsm = await nc.jetstreamManager({ timeout: 2000 });
        const config = logStreamConfig(nc);
        try {
          await jsm.streams.info(LOG_STREAM);
        } catch {
          await jsm.streams.add(config);
        }
        return new ClusterLink(nc, jsm, nodeId, config.num_replicas, servers);
      } catch (err) {
        // Said once: a node starting before JetStream has its meta leader otherwise says
        // nothing between `starting` and its first log read.
        if (lastError === undefined) {
          log.warn("cluster waiting for NATS JetStream", { error: describe(err) });
        }
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
   * One left unanswered makes the link check its server at once.
   */
  async append(data: Uint8Array, msgId: string, timeoutMs: number): Promise<AppendOutcome> {
    let error = "NATS connection lost";
    try {
      const ack = await this.#requests.publish(this.js, LOG_SUBJECT, data, msgId, timeoutMs);
      if (ack) return { kind: "stored", seq: ack.seq, duplicate: ack.duplicate };
    } catch (err) {
      error = describe(err);
    }
    this.#failover.suspect();
    return { kind: "unknown", error };
  }

  /** A read of the log failed; `logTail` is the last position the caller knows exists. The
   * link leaves a server on which reads keep failing (a successful `read` ends the count). */
  readFailed(err: unknown, logTail: number): void {
    this.#failover.readFailed(err, logTail);
  }

  /** A snapshot read failed on this server: resolves once the link is on another one (a
   * stopped node reads nothing else that would move it). */
  snapshotReadFailed(err: unknown, attempt: number): Promise<void> {
    return this.#failover.snapshotReadFailed(err, attempt);
  }

  /** Why the link last left a server for not answering pings (see `failover.ts`). */
  get lastMove(): Failover["lastMove"] {
    return this.#failover.lastMove;
  }

  /** The stored message at `seq`, or null when there is none (yet), as the stream's leader
   * answers. */
  async read(seq: number): Promise<Uint8Array | null> {
    try {
      const r = await this.#requests.api(`$JS.API.STREAM.MSG.GET.${LOG_STREAM}`, { seq }) as {
        message?: { data?: string };
      };
      this.#failover.readsOk();
      return r.message?.data ? Buffer.from(r.message.data, "base64") : new Uint8Array(0);
    } catch (err) {
      const code = (err as { api_error?: { err_code?: number } }).api_error?.err_code;
      if (code !== 10037) throw new Error(describe(err));
      this.#failover.readsOk();
      return null; // no message there (yet)
    }
  }

  /** The log's first position still stored (later than 1 once compacted), its last, and the
   * server leading the stream as it names itself (none on a single server). */
  async bounds(): Promise<{ first: number; last: number; leader?: string }> {
    try {
      const { state, cluster } = await this.#requests.api(
        `$JS.API.STREAM.INFO.${LOG_STREAM}`,
        {},
      ) as {
        state: { first_seq: number; last_seq: number };
        cluster?: { leader?: string };
      };
      return { first: state.first_seq, last: state.last_seq, leader: cluster?.leader };
    } catch (err) {
      throw new Error(describe(err));
    }
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
    return this.js.views.os(bucket, this.#objectOptions());
  }

  /** Stores `file` as object `meta.name` of the object store `bucket` (as `objectStore`), a
   * few chunks at a time (`object_put.ts`); the stored object's info. */
  putObject(bucket: string, meta: ObjectStoreMeta, file: string): Promise<ObjectInfo> {
    return putFile(this.js, bucket, this.#objectOptions(), meta, file);
  }

  #objectOptions(): Partial<ObjectStoreOptions> {
    return { replicas: this.#replicas, storage: StorageType.File };
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
    return this.#failover.connected();
  }

  /** Closes the connection after flushing. */
  async close(): Promise<void> {
    this.#failover.stop();
    if (this.nc.isClosed()) return;
    await this.nc.drain().catch(() => this.nc.close());
  }
}
