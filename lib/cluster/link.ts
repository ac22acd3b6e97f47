/**
 * The node's connection to NATS: JetStream for the replicated write log (one stream) and its
 * snapshots (an object store), core NATS for the traffic that is not stored
 * (relayed events, presence). Knows nothing about what the bytes mean.
 */
import { Buffer } from "node:buffer";
import {
  connect,
  createInbox,
  DebugEvents,
  DeliverPolicy,
  Events,
  type JetStreamClient,
  type JetStreamManager,
  type Msg,
  type NatsConnection,
  type ObjectInfo,
  type ObjectStore,
  type ObjectStoreMeta,
  type ObjectStoreOptions,
  type PubAck,
  StorageType,
} from "nats";
import { log } from "../log/mod.ts";
import "./nats_transport.ts";
import { putFile } from "./object_put.ts";

/** Client pings: a server that answers none of `MAX_PINGS_OUT` pings sent `PING_MS` apart is
 * left for another one from `--nats` (a frozen server is noticed in a few seconds, not the
 * client's default two minutes). */
const PING_MS = 1000;
const MAX_PINGS_OUT = 3;
/** How long one dial (TCP plus the server's greeting) may take before the next server. */
const DIAL_MS = 2000;
/** Dial attempts logged per outage at most (a long one retries every server for ever). */
const DIALS_LOGGED = 12;
/** How long a ping may wait for its answer before the connection moves on (a loaded healthy
 * server, e.g. the stream's leader while a replica catches up, answered in more than 1.5 s in
 * the nemesis: nodes then left it for nothing, twice in a row). */
const SUSPECT_RTT_MS = 2500;
/** The watchdog's ping interval (`ClusterLink#watchdog`). */
const WATCH_PING_MS = 250;
/** How long a ping may wait while nothing at all comes from the server either (no message:
 * the node's own heartbeats and reports come back to it, other nodes' arrive) before the
 * connection moves on. A frozen or cut-off server goes silent at once; a loaded healthy one
 * still delivers while a ping waits, so it gets the whole `SUSPECT_RTT_MS`. */
const SILENT_MS = 1250;

/** How long a JetStream API request (a read of the log, its bounds) may wait for its answer,
 * and, once a server answered "JetStream temporarily unavailable" (10008), for a better answer
 * from another one (see `#api`). */
const API_MS = 2000;
const API_GRACE_MS = 750;

/** A request still unanswered is sent again (`#answered`) once JetStream answered a request
 * sent at least `RESEND_GAP_MS` after it, when it was sent while JetStream was seen failing:
 * before a failure, or less than `TROUBLED_MS` after one (a request sent as the new leader
 * takes over may be dropped too, with no failure after it). */
const RESEND_GAP_MS = 100;
const TROUBLED_MS = 1000;
/** How often one request may be sent again so, at most. */
const MAX_RESENDS = 3;

/** How long the look for a server that answers JetStream requests (`#seek`) may wait for
 * each server, and how often it may run at most. */
const SEEK_MS = 1000;

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

/** A JetStream request waiting for its answer (a read, the log's bounds, a publish): when and
 * how often it was sent, and how to send it again. */
interface Pending {
  firstAt: number;
  sentAt: number;
  resends: number;
  send(): void;
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
  /** Send times of the watchdog's pings not answered yet. */
  #pings = new Set<{ at: number }>();
  #lastTick = Date.now();
  /** Messages received so far (nats.js's count), and when that count last grew. */
  #inMsgs = 0;
  #heardAt = Date.now();
  #watchTimer: ReturnType<typeof setInterval>;
  /** The reply subjects' prefix of JetStream API requests (`#api`), their count, and the
   * requests waiting for an answer, by their reply subject's last token. */
  #apiInbox: string | undefined;
  #apiSeq = 0;
  #apiWaiting = new Map<string, (m: Msg) => void>();
  /** Requests in flight, each ended when the connection is lost (their replies cannot come)
   * instead of waiting out its timeout. */
  #inflight = new Set<() => void>();
  /** JetStream requests waiting for their answer (`#answered` may send them again), and when
   * JetStream was last seen failing one (no responders, a timeout, 10008, a connection lost). */
  #pending = new Set<Pending>();
  #failedAt = 0;
  /** The servers from `--nats`; the running look for one that answers (`#seek`), when the
   * last one started, and when JetStream last answered an API request on this connection. */
  #servers: string[];
  #seeking = false;
  #soughtAt = 0;
  #apiAnsweredAt = 0;

  private constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    nodeId: string,
    replicas: number,
    servers: string[],
  ) {
    this.nc = nc;
    this.#servers = servers;
    this.#replicas = replicas;
    this.#maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    this.jsm = jsm;
    this.js = nc.jetstream();
    this.nodeId = nodeId;
    rotatePastCurrent(nc);
    void this.#watch();
    this.#watchTimer = setInterval(() => this.#watchdog(), WATCH_PING_MS);
  }

  /** Logs every disconnect, dial and reconnect (which server, how long), and ends the requests
   * in flight when the connection is lost. */
  async #watch(): Promise<void> {
    let lostAt = 0;
    let dials: string[] = [];
    for await (const s of this.nc.status()) {
      if (s.type === Events.Disconnect) {
        lostAt = Date.now();
        dials = [];
        log.warn("cluster NATS connection lost", { server: String(s.data) });
        this.#pings.clear();
        this.#failed();
        for (const end of this.#inflight) end();
        this.#inflight.clear();
      } else if (s.type === DebugEvents.Reconnecting) {
        if (dials.length < DIALS_LOGGED) {
          dials.push(`${String(s.data)}@${lostAt ? Date.now() - lostAt : 0}ms`);
        }
      } else if (s.type === DebugEvents.StaleConnection) {
        log.warn("cluster NATS server missed pings; moving to another", {
          server: this.nc.getServer(),
          max_pings_out: MAX_PINGS_OUT,
        });
      } else if (s.type === Events.Reconnect) {
        log.info("cluster NATS reconnected", {
          server: String(s.data),
          after_ms: lostAt ? Date.now() - lostAt : 0,
          dials: dials.join(" "),
        });
      }
    }
  }

  /** `p`, or `value()` when the connection is lost before `p` settles. */
  #orMoved<T>(p: Promise<T>, value: () => T): Promise<T> {
    let end!: () => void;
    const moved = new Promise<T>((resolve, reject) => {
      end = () => {
        try {
          resolve(value());
        } catch (err) {
          reject(err);
        }
      };
    });
    this.#inflight.add(end);
    return Promise.race([p, moved]).finally(() => this.#inflight.delete(end));
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
   */
  async append(data: Uint8Array, msgId: string, timeoutMs: number): Promise<AppendOutcome> {
    const deadline = Date.now() + Math.max(100, timeoutMs);
    let pending: Pending | undefined;
    let ack: PubAck;
    try {
      const publish = new Promise<PubAck>((resolve, reject) => {
        let running = 0;
        let settled = false;
        const send = () => {
          running++;
          const sentAt = Date.now();
          this.js.publish(LOG_SUBJECT, data, {
            msgID: msgId,
            timeout: Math.max(100, deadline - sentAt),
          }).then((r) => {
            if (settled) return;
            settled = true;
            resolve(r);
            this.#answered(sentAt);
          }, (err) => {
            this.#failed();
            if (--running === 0 && !settled) {
              settled = true;
              reject(err);
            }
          });
        };
        pending = { firstAt: Date.now(), sentAt: Date.now(), resends: 0, send };
        this.#pending.add(pending);
        send();
      });
      publish.catch(() => {}); // a reply that comes after a move is dropped
      // A connection lost meanwhile cannot bring the reply: the caller retries (same message
      // id) on the next server at once rather than after the timeout.
      const r = await this.#orMoved(publish, () => null);
      if (r === null) return { kind: "unknown", error: "NATS connection lost" };
      ack = r;
    } catch (err) {
      return { kind: "unknown", error: describe(err) };
    } finally {
      if (pending) this.#pending.delete(pending);
    }
    return { kind: "stored", seq: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * JetStream answered a request first sent at `sentAt`. A request sent while the stream had no
   * working leader (an election after its leader failed) is dropped, never answered: it would
   * wait out its whole timeout (2 s for a read, 1 s for a publish) after JetStream is back, and
   * the write that needs it with it. So every request still waiting that was sent
   * `RESEND_GAP_MS` or more before this one, while JetStream was seen failing (see
   * `TROUBLED_MS`), is sent again now. Reads are idempotent and a publish goes again
   * under its message id (stored once), so a request that was only slow costs one more answer;
   * under load without failures nothing is sent again.
   */
  #answered(sentAt: number): void {
    let again = 0;
    for (const p of this.#pending) {
      if (
        p.sentAt + RESEND_GAP_MS > sentAt || p.sentAt > this.#failedAt + TROUBLED_MS ||
        p.resends >= MAX_RESENDS
      ) continue;
      p.resends++;
      p.sentAt = Date.now();
      p.send();
      again++;
    }
    if (again > 0) {
      log.debug("cluster NATS requests sent again (JetStream answers again)", { requests: again });
    }
  }

  /** Notes that JetStream failed a request just now (see `#answered`). */
  #failed(): void {
    this.#failedAt = Date.now();
  }

  /**
   * Called when a request went unanswered: checks at once whether the server still answers
   * pings (see `#watchdog`); a server that does stays (the stream's leader is elsewhere, or
   * being elected).
   */
  suspect(): void {
    this.#checkSilence();
  }

  /**
   * Pings the server every `WATCH_PING_MS` and moves to another server from `--nats` as soon
   * as one ping has waited `SUSPECT_RTT_MS` for its answer (a frozen or cut-off server is left
   * within `SUSPECT_RTT_MS` plus one ping interval, whether or not writes are waiting on it).
   * A round that fires late (this process held its event loop) judges nothing: the answers
   * may be waiting unread.
   */
  #watchdog(): void {
    const now = Date.now();
    const late = now - this.#lastTick > WATCH_PING_MS * 2;
    this.#lastTick = now;
    if (late || this.nc.isClosed()) return;
    if (this.#checkSilence()) return;
    if (!this.connected() || this.#pings.size >= 16) return;
    const ping = { at: now };
    this.#pings.add(ping);
    this.nc.flush().then(() => {
      // Answers come in order: every earlier ping is answered too.
      for (const p of this.#pings) if (p.at <= ping.at) this.#pings.delete(p);
    }, () => this.#pings.delete(ping));
  }

  /**
   * This connection's server refused a JetStream request with "JetStream system temporarily
   * unavailable" (10008), and no better answer came within `API_GRACE_MS`: with nats-server 2.9.10 a server that lost sight of JetStream's meta
   * leader (after another server resumed from a freeze) answers every API request so, at once,
   * for about 5 s, while the stream's leader serves the clients of another server (its answer
   * across the route does not always come). Asks every other server from `--nats`, each over a
   * short-lived connection of its own, for the stream's info, and moves to the one that answers
   * it properly and names itself as the stream's leader (dialled next; the stream's leader
   * serves its own clients), unless JetStream answered an API request on this connection
   * meanwhile. Stays when none does (JetStream itself is electing, or the leader is this
   * server: moving blind only costs a dial, or lands on another refusing server). An answer is
   * not enough: the first one may come from another server across a route (in a nemesis run
   * nodes moved between two refusing servers every second so).
   */
  #seek(): void {
    const others = this.#servers.filter((u) => !sameServer(u, this.nc.getServer()));
    if (
      this.#seeking || Date.now() - this.#soughtAt < SEEK_MS || others.length === 0 ||
      !this.connected()
    ) return;
    this.#seeking = true;
    const started = this.#soughtAt = Date.now();
    const from = this.nc.getServer();
    const ask = async (url: string): Promise<string> => {
      const nc = await connect({
        servers: [url],
        timeout: SEEK_MS,
        reconnect: false,
        noRandomize: true,
        ignoreClusterUpdates: true,
        name: `switchboard-${this.nodeId}-seek`,
      });
      try {
        const m = await nc.request(
          `$JS.API.STREAM.INFO.${LOG_STREAM}`,
          new TextEncoder().encode("{}"),
          { timeout: SEEK_MS },
        );
        const r = JSON.parse(new TextDecoder().decode(m.data)) as {
          error?: ApiError;
          cluster?: { leader?: string };
        };
        if (r.error) throw apiError(r.error);
        // The first answer may come across a route from another server: only the stream's
        // leader itself is known to serve its own clients.
        if (nc.info?.cluster && r.cluster?.leader !== nc.info.server_name) {
          throw new Error(`${url} does not lead the stream`);
        }
        return url;
      } finally {
        await nc.close().catch(() => {});
      }
    };
    Promise.any(others.map(ask)).then((url) => {
      // A server just resumed from a freeze may answer once from its stale state, then refuse:
      // the next refusal seeks again (`SEEK_MS` later at the soonest).
      if (this.#apiAnsweredAt >= started || this.nc.getServer() !== from || !this.connected()) {
        return;
      }
      const list =
        (this.nc as unknown as { protocol?: { servers?: { servers?: { listen?: string }[] } } })
          .protocol?.servers?.servers;
      const at = list?.findIndex((s) =>
        typeof s.listen === "string" && sameServer(url, s.listen)
      ) ?? -1;
      if (list && at > 0) list.unshift(...list.splice(at, 1));
      this.moveOn(
        "cluster NATS server refuses JetStream requests (10008); moving to one that answers",
        { to: url, sought_ms: Date.now() - started },
      );
    }, () => {
      log.debug(
        "cluster NATS server refuses JetStream requests (10008); no other server answers: staying",
        { sought_ms: Date.now() - started },
      );
    }).finally(() => (this.#seeking = false));
  }

  /** Leaves the current server for the next one from `--nats` (logging `why`). */
  moveOn(why: string, fields: Record<string, unknown> = {}): void {
    log.warn(why, { server: this.nc.getServer(), ...fields });
    // nats.js's reconnect() first flushes the socket, which on a silent link (a partitioned
    // server, the send buffer full) waits until the kernel takes the data: a node took 4 s
    // more to leave. A transport closed with an error skips the flush (nats.js internals, 2.x;
    // reconnect() where they are not there).
    const transport = (this.nc as unknown as {
      protocol?: { transport?: { _closed?: (err: Error, internal: boolean) => Promise<void> } };
    })
      .protocol?.transport;
    if (typeof transport?._closed === "function") {
      void transport._closed(new Error(why), true).catch(() => {});
    } else void this.nc.reconnect().catch(() => {});
  }

  /** Moves to another server when a ping has waited `SUSPECT_RTT_MS`, or `SILENT_MS` while
   * no message came either (`silentFor`); true when it moved. */
  #checkSilence(): boolean {
    if (!this.connected()) return false;
    const now = Date.now();
    const { inMsgs } = this.nc.stats();
    if (inMsgs !== this.#inMsgs) {
      this.#inMsgs = inMsgs;
      this.#heardAt = now;
    }
    let oldest = Infinity;
    for (const p of this.#pings) oldest = Math.min(oldest, p.at);
    if (now - this.#lastTick > WATCH_PING_MS * 2) return false;
    const why = silentFor(now - oldest, now - this.#heardAt);
    if (!why) return false;
    this.#pings.clear();
    this.moveOn(
      why === "silent"
        ? "cluster NATS server silent; moving to another"
        : "cluster NATS server does not answer; moving to another",
      { ping_waited_ms: now - oldest, heard_ms_ago: now - this.#heardAt },
    );
    this.lastMove = { why, pingWaitedMs: now - oldest };
    return true;
  }

  /** Why the watchdog last left a server, and how long its oldest ping had waited then. */
  lastMove: { why: "silent" | "unanswered"; pingWaitedMs: number } | undefined;

  /** The stored message at `seq`, or null when there is none (yet), as the stream's leader
   * answers. */
  async read(seq: number): Promise<Uint8Array | null> {
    try {
      const r = await this.#api(`$JS.API.STREAM.MSG.GET.${LOG_STREAM}`, { seq }) as {
        message?: { data?: string };
      };
      return r.message?.data ? Buffer.from(r.message.data, "base64") : new Uint8Array(0);
    } catch (err) {
      const code = (err as { api_error?: { err_code?: number } }).api_error?.err_code;
      if (code === 10037) return null; // no message found
      throw new Error(describe(err));
    }
  }

  /** The log's first position still stored (later than 1 once compacted) and its last. */
  async bounds(): Promise<{ first: number; last: number }> {
    const { first, last } = await this.state();
    return { first, last };
  }

  /** The log's bounds (see `bounds`) and the server leading the stream, as it names itself
   * (undefined when it names none: a single server). */
  async state(): Promise<{ first: number; last: number; leader?: string }> {
    try {
      const { state, cluster } = await this.#api(`$JS.API.STREAM.INFO.${LOG_STREAM}`, {}) as {
        state: { first_seq: number; last_seq: number };
        cluster?: { leader?: string };
      };
      return { first: state.first_seq, last: state.last_seq, leader: cluster?.leader };
    } catch (err) {
      throw new Error(describe(err));
    }
  }

  /**
   * A JetStream API request answered by the stream's leader. Every server takes the request,
   * and with nats-server 2.9.10 one that lost sight of JetStream's meta leader answers at once
   * "JetStream system temporarily unavailable" (10008), while the stream's leader, elsewhere,
   * answers it correctly a little later: measured after a frozen server resumed, the servers
   * that lost their meta leader answered every read so for 5 s while a client on the third
   * server read on. nats.js takes the first answer; this takes the first other one, waiting
   * `API_GRACE_MS` after a 10008 (then it stands). Ends at once when the connection is lost.
   */
  #api(subject: string, body: unknown, timeoutMs = API_MS): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const token = String(++this.#apiSeq);
      let unavailable: ApiError | undefined;
      let grace: ReturnType<typeof setTimeout> | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finish = (settle: () => void) => {
        if (!this.#apiWaiting.delete(token)) return;
        clearTimeout(timer);
        clearTimeout(grace);
        this.#inflight.delete(end);
        this.#pending.delete(pending);
        settle();
      };
      const fail = (err: unknown) => {
        this.#failed();
        finish(() => reject(err));
      };
      this.#apiWaiting.set(token, (m) => {
        // No server took the request (nats.js's "no responders").
        if (m.data.length === 0 && m.headers?.code === 503) {
          return fail(Object.assign(new Error("503"), { code: "503" }));
        }
        let r: Record<string, unknown> & { error?: ApiError };
        try {
          r = JSON.parse(new TextDecoder().decode(m.data));
        } catch (e) {
          return fail(e);
        }
        if (r.error?.err_code === 10008) {
          this.#failed();
          unavailable = r.error;
          grace ??= setTimeout(() => {
            fail(apiError(unavailable!));
            this.#seek();
          }, API_GRACE_MS);
          return;
        }
        // Any other answer, an error included (10037: no message there), comes from the
        // stream's leader: JetStream answers.
        if (r.error) finish(() => reject(apiError(r.error!)));
        else finish(() => resolve(r));
        this.#apiAnsweredAt = Date.now();
        this.#answered(pending.firstAt);
      });
      const end = () => fail(new Error("NATS connection lost"));
      this.#inflight.add(end);
      // Sent once, and again by `#answered` (same reply subject: the first answer counts),
      // each time with the grace before it and at least the grace left before the timeout
      // (so a request ends at most `API_GRACE_MS` past its timeout).
      const deadline = Date.now() + timeoutMs;
      const send = () => {
        clearTimeout(timer);
        clearTimeout(grace);
        grace = undefined;
        const left = Math.max(deadline - Date.now(), API_GRACE_MS);
        timer = setTimeout(
          () =>
            fail(
              unavailable
                ? apiError(unavailable)
                : Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" }),
            ),
          left,
        );
        try {
          // One subscription for every answer (a subscription per request would cost the
          // servers an interest change each): the reply subject's last token names the request.
          if (!this.#apiInbox) {
            const inbox = createInbox();
            this.nc.subscribe(`${inbox}.*`, {
              callback: (_err, m) => this.#apiWaiting.get(m.subject.slice(inbox.length + 1))?.(m),
            });
            this.#apiInbox = inbox;
          }
          this.nc.publish(subject, new TextEncoder().encode(JSON.stringify(body)), {
            reply: `${this.#apiInbox}.${token}`,
          });
        } catch (err) {
          fail(err);
        }
      };
      const pending: Pending = { firstAt: Date.now(), sentAt: Date.now(), resends: 0, send };
      this.#pending.add(pending);
      send();
    });
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
    const protocol = (this.nc as unknown as { protocol?: { connected?: boolean } }).protocol;
    return !this.nc.isClosed() && protocol?.connected === true;
  }

  /** Closes the connection after flushing. */
  async close(): Promise<void> {
    clearInterval(this.#watchTimer);
    if (this.nc.isClosed()) return;
    await this.nc.drain().catch(() => this.nc.close());
  }
}

/** A JetStream API error answer. */
interface ApiError {
  code?: number;
  err_code?: number;
  description?: string;
}

/** An error carrying JetStream's answer as nats.js's do (`api_error`). */
function apiError(e: ApiError): Error {
  return Object.assign(new Error(`${e.code ?? ""} ${e.description ?? ""}`.trim()), {
    api_error: e,
  });
}

/**
 * Whether a server is to be left: "unanswered" once a ping has waited `SUSPECT_RTT_MS`,
 * "silent" once it has waited `SILENT_MS` while no message came from the server for as long
 * (`heardMsAgo`), else undefined.
 */
export function silentFor(
  pingWaitedMs: number,
  heardMsAgo: number,
): "silent" | "unanswered" | undefined {
  if (pingWaitedMs > SUSPECT_RTT_MS) return "unanswered";
  if (pingWaitedMs > SILENT_MS && heardMsAgo > SILENT_MS) return "silent";
  return undefined;
}

/** An error's text, with JetStream's own description when it gave one (nats.js names both
 * "no responders" and "JetStream temporarily unavailable" just `503`). */
function describe(err: unknown): string {
  const api =
    (err as { api_error?: { code?: number; err_code?: number; description?: string } }).api_error;
  if (api) return `JetStream ${api.code} ${api.description ?? ""} (${api.err_code})`;
  const code = (err as { code?: string }).code;
  if (code === "503") return "503 no responders";
  return err instanceof Error ? err.message : String(err);
}

/** Whether server URL `a` and `b` (a URL or nats.js's `host:port`) name the same server. */
function sameServer(a: string, b: string): boolean {
  const hostPort = (u: string) =>
    u.replace(/^[a-z]+:\/\//, "").replace(/\/.*$/, "").replace(/^localhost:/, "127.0.0.1:");
  return hostPort(a) === hostPort(b);
}

/**
 * nats.js dials its server list in turn, each time taking the one after the server it last
 * dialled; right after the first connect, though, that server is still first in the list, so
 * the first reconnect dials the server just left (a frozen or cut-off one then costs a whole
 * dial timeout before the next server is tried). Puts it last, as every later dial does.
 * Relies on nats.js internals (2.x); does nothing when they are not there.
 */
function rotatePastCurrent(nc: NatsConnection): void {
  const servers =
    (nc as unknown as { protocol?: { servers?: { servers?: unknown[]; currentServer?: unknown } } })
      .protocol?.servers;
  const list = servers?.servers;
  if (Array.isArray(list) && list.length > 1 && list[0] === servers!.currentServer) {
    list.push(list.shift());
  }
}
