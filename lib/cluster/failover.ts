/**
 * Which server from `--nats` the node uses, decided here alone; the rest of the node only
 * reports what it saw (`ClusterLink#readFailed`, `snapshotReadFailed`).
 */
import { connect, type ConnectionOptions, DebugEvents, Events, type NatsConnection } from "nats";
import { log } from "../log/mod.ts";
import type { JetStreamRequests } from "./jetstream_api.ts";
import "./nats_transport.ts";

/** nats.js's own pings (the watchdog is quicker), and one dial's timeout. */
const PING_MS = 1000;
const MAX_PINGS_OUT = 3;
const DIAL_MS = 2000;
/** Dial attempts logged per outage at most (a long one retries every server for ever). */
const DIALS_LOGGED = 12;
/** The watchdog's ping interval; how long a ping may wait (a loaded healthy server answered
 * in over 1.5 s in the nemesis), and while nothing else came either (a frozen or cut-off server
 * goes silent at once; a live one delivers the node's own heartbeats back to it). */
const WATCH_PING_MS = 250;
const SUSPECT_RTT_MS = 2500;
const SILENT_MS = 1250;
/** How long `#seek` waits for each server, and how often it may run at most. */
const SEEK_MS = 1000;
/** How long reads may keep failing before the server is left, while the log grows and while
 * it does not (JetStream may be electing, every server failing alike: a move only costs a dial). */
const READS_FAILING_MS = 6000;
const READS_STUCK_MS = 24_000;
/** How long a move for a snapshot read may wait for the next server. */
const RECONNECT_WAIT_MS = 5000;

/** The connection's options for `servers`: reconnecting for ever, pinging every second. */
export function connectOptions(servers: string[], nodeId: string): ConnectionOptions {
  return {
    servers,
    name: `switchboard-${nodeId}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    timeout: DIAL_MS,
    pingInterval: PING_MS,
    maxPingOut: MAX_PINGS_OUT,
  };
}

/** nats.js 2.x's connection internals used here (see `#moveOn` and `rotatePastCurrent`). */
type Internals = {
  protocol?: {
    connected?: boolean;
    transport?: { _closed?: (err: Error, internal: boolean) => Promise<void> };
    servers?: { servers?: { listen?: string }[]; currentServer?: unknown };
  };
};

/** See the module comment. */
export class Failover {
  /** Why the watchdog last left a server, and how long its oldest ping had waited then. */
  lastMove: { why: "silent" | "unanswered"; pingWaitedMs: number } | undefined;
  #nc: NatsConnection;
  #servers: string[];
  #nodeId: string;
  #requests: JetStreamRequests;
  /** Pings unanswered, the last round, messages received (nats.js's count), when it grew. */
  #pings = new Set<{ at: number }>();
  #lastTick = Date.now();
  #inMsgs = 0;
  #heardAt = Date.now();
  #timer: ReturnType<typeof setInterval>;
  #seeking = false;
  #soughtAt = 0;
  /** Since when reads of the log fail, and the log's known tail then. */
  #readsFailingSince = 0;
  #tailWhenFailing = 0;

  /** Watches `nc` (from `servers`); a lost connection ends `requests` in flight. */
  constructor(nc: NatsConnection, servers: string[], nodeId: string, requests: JetStreamRequests) {
    this.#nc = nc;
    this.#servers = servers;
    this.#nodeId = nodeId;
    this.#requests = requests;
    rotatePastCurrent(nc);
    void this.#watch();
    this.#timer = setInterval(() => this.#watchdog(), WATCH_PING_MS);
  }

  /** Stops the watchdog. */
  stop(): void {
    clearInterval(this.#timer);
  }

  /** True while connected to a server. */
  connected(): boolean {
    return !this.#nc.isClosed() && (this.#nc as Internals).protocol?.connected === true;
  }

  /** A request went unanswered: a server that no longer answers pings is left now. */
  suspect(): void {
    this.#checkSilence();
  }

  /** A read of the log failed (`logTail`: the last position known to exist). A server that
   * answers pings but fails every read is left after `READS_FAILING_MS` if the log grew
   * meanwhile, else `READS_STUCK_MS`; refusals (10008) are `seek`'s. */
  readFailed(err: unknown, logTail: number): void {
    const now = Date.now();
    if (this.#readsFailingSince === 0) {
      this.#readsFailingSince = now;
      this.#tailWhenFailing = logTail;
      return;
    }
    const failing = now - this.#readsFailingSince;
    const grew = logTail > this.#tailWhenFailing;
    if (
      !this.connected() || /\(10008\)/.test(String(err)) ||
      failing < (grew ? READS_FAILING_MS : READS_STUCK_MS)
    ) return;
    this.#readsFailingSince = now;
    this.#tailWhenFailing = logTail;
    this.#moveOn("cluster reads keep failing on this NATS server; moving to another", {
      error: String(err),
      failing_ms: failing,
      log_grew: grew,
    });
  }

  /** A read of the log succeeded. */
  readsOk(): void {
    this.#readsFailingSince = 0;
  }

  /** A stopped node's snapshot read failed: moves, and resolves once connected again. */
  async snapshotReadFailed(err: unknown, attempt: number): Promise<void> {
    this.#moveOn("cluster snapshot read failed on this NATS server; reading it from another", {
      error: String(err),
      attempt,
    });
    // The transport closes on a later turn: connected() may still say yes at first.
    await new Promise((r) => setTimeout(r, 100));
    for (const end = Date.now() + RECONNECT_WAIT_MS; !this.connected() && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Logs disconnects, dials and reconnects; a lost connection ends the requests in flight. */
  async #watch(): Promise<void> {
    let lostAt = 0;
    let dials: string[] = [];
    for await (const s of this.#nc.status()) {
      if (s.type === Events.Disconnect) {
        lostAt = Date.now();
        dials = [];
        log.warn("cluster NATS connection lost", { server: String(s.data) });
        this.#pings.clear();
        this.#requests.lost();
      } else if (s.type === DebugEvents.Reconnecting) {
        if (dials.length < DIALS_LOGGED) {
          dials.push(`${String(s.data)}@${lostAt ? Date.now() - lostAt : 0}ms`);
        }
      } else if (s.type === DebugEvents.StaleConnection) {
        log.warn("cluster NATS server missed pings; moving to another", {
          server: this.#nc.getServer(),
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

  /** Pings every `WATCH_PING_MS`, writes waiting or not. A late round (this process held its
   * event loop) judges nothing: the answers may be waiting unread. */
  #watchdog(): void {
    const now = Date.now();
    const late = now - this.#lastTick > WATCH_PING_MS * 2;
    this.#lastTick = now;
    if (late || this.#nc.isClosed() || this.#checkSilence()) return;
    if (!this.connected() || this.#pings.size >= 16) return;
    const ping = { at: now };
    this.#pings.add(ping);
    this.#nc.flush().then(() => {
      // Answers come in order: every earlier ping is answered too.
      for (const p of this.#pings) if (p.at <= ping.at) this.#pings.delete(p);
    }, () => this.#pings.delete(ping));
  }

  /** Moves to another server when a ping has waited too long (`silentFor`); true when it moved. */
  #checkSilence(): boolean {
    if (!this.connected()) return false;
    const now = Date.now();
    const { inMsgs } = this.#nc.stats();
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
    this.#moveOn(
      why === "silent"
        ? "cluster NATS server silent; moving to another"
        : "cluster NATS server does not answer; moving to another",
      { ping_waited_ms: now - oldest, heard_ms_ago: now - this.#heardAt },
    );
    this.lastMove = { why, pingWaitedMs: now - oldest };
    return true;
  }

  /**
   * This server refused a request with 10008 and no better answer came (nats-server 2.9.10: one
   * that lost JetStream's meta leader refuses for about 5 s while the stream's leader serves
   * others). Asks every other server, over a short-lived connection each, for the stream's info
   * and moves to the one naming itself leader (an answer across a route is not enough), unless
   * JetStream answered here meanwhile; else stays. At most once per `SEEK_MS`.
   */
  seek(stream: string): void {
    const from = this.#nc.getServer();
    const others = this.#servers.filter((u) => !sameServer(u, from));
    if (
      this.#seeking || Date.now() - this.#soughtAt < SEEK_MS || others.length === 0 ||
      !this.connected()
    ) return;
    this.#seeking = true;
    const started = this.#soughtAt = Date.now();
    const ask = async (url: string): Promise<string> => {
      const nc = await connect({
        servers: [url],
        timeout: SEEK_MS,
        reconnect: false,
        noRandomize: true,
        ignoreClusterUpdates: true,
        name: `switchboard-${this.#nodeId}-seek`,
      });
      try {
        const m = await nc.request(
          `$JS.API.STREAM.INFO.${stream}`,
          new TextEncoder().encode("{}"),
          {
            timeout: SEEK_MS,
          },
        );
        const r = JSON.parse(new TextDecoder().decode(m.data)) as {
          error?: unknown;
          cluster?: { leader?: string };
        };
        if (r.error || (nc.info?.cluster && r.cluster?.leader !== nc.info.server_name)) {
          throw new Error(`${url} does not lead the stream`);
        }
        return url;
      } finally {
        await nc.close().catch(() => {});
      }
    };
    Promise.any(others.map(ask)).then((url) => {
      if (
        this.#requests.answeredAt >= started || this.#nc.getServer() !== from || !this.connected()
      ) return;
      const list = (this.#nc as Internals).protocol?.servers?.servers;
      const at = list?.findIndex((s) => typeof s.listen === "string" && sameServer(url, s.listen));
      if (list && at !== undefined && at > 0) list.unshift(...list.splice(at, 1));
      this.#moveOn(
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
  #moveOn(why: string, fields: Record<string, unknown>): void {
    log.warn(why, { server: this.#nc.getServer(), ...fields });
    // nats.js's reconnect() first flushes, which on a silent link waits for the kernel to take
    // the data (4 s once); a transport closed with an error skips that (2.x and 3.x internals).
    const transport = (this.#nc as Internals).protocol?.transport;
    if (typeof transport?._closed === "function") {
      void transport._closed(new Error(why), true).catch(() => {});
    } else void this.#nc.reconnect().catch(() => {});
  }
}

/** Whether to leave a server whose oldest ping waited `pingWaitedMs`, having heard nothing
 * from it for `heardMsAgo`. */
export function silentFor(
  pingWaitedMs: number,
  heardMsAgo: number,
): "silent" | "unanswered" | undefined {
  if (pingWaitedMs > SUSPECT_RTT_MS) return "unanswered";
  if (pingWaitedMs > SILENT_MS && heardMsAgo > SILENT_MS) return "silent";
  return undefined;
}

/** Whether server URL `a` and `b` (a URL or nats.js's `host:port`) name the same server. */
function sameServer(a: string, b: string): boolean {
  const hostPort = (u: string) =>
    u.replace(/^[a-z]+:\/\//, "").replace(/\/.*$/, "").replace(/^localhost:/, "127.0.0.1:");
  return hostPort(a) === hostPort(b);
}

/** nats.js (2.x; 3.x's `Servers.selectServer` alike) dials the server after the last one
 * dialled, but after the first connect that one is still first: the first reconnect would
 * redial the server just left. Puts it last. Does nothing where the internals are not there. */
function rotatePastCurrent(nc: NatsConnection): void {
  const servers = (nc as Internals).protocol?.servers;
  const list = servers?.servers;
  if (Array.isArray(list) && list.length > 1 && list[0] === servers!.currentServer) {
    list.push(list.shift()!);
  }
}
