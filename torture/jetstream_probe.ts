// JetStream's own availability, measured beside the Switchboard nodes by the cluster nemesis
// (cluster.ts), outside Switchboard: one plain nats.js client per nats-server, each pinned to
// its server (no failover), publishes straight to the log's stream every 100 ms and reads the
// message back by position from the stream's leader (`STREAM.MSG.GET`), as a node does for its
// own writes: the first answer other than "JetStream system temporarily unavailable" (10008)
// within the read's wait counts, as for a node (`lib/cluster/link.ts`), since every server
// takes the read and one that lost sight of JetStream's meta leader answers 10008 at once
// while the stream's leader answers a little later. A publish without a reply within 1 s is sent again with the same message id, as
// a node does. The message is an empty write set from a writer no node knows (the
// `LogMessage` shape of `lib/cluster/replicated_env.ts`) read at a position far in the past:
// every node skips it as stale (an empty write set that applied would be taken for a skipped
// one by a node that restarts and rebuilds its fingerprints from its store), so
// the probe shares the stream, its Raft group and its leader with the nodes' writes without
// changing any object. What a fault cost JetStream itself is then the longest time no probe
// on a server that stayed up completed a publish and its read (`stall`), measured exactly like
// a node's stall (time between acknowledgements).
import { connect, createInbox, type JetStreamClient, type Msg, type NatsConnection } from "nats";
import { Packr } from "msgpackr";
import { sleep } from "./common.ts";

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);
const STREAM = "SWITCHBOARD";
const SUBJECT = "sb.log";
const EVERY_MS = 100;
const TRY_MS = 1000;

/** One probe's failure: when, on which server, and what JetStream answered. */
export interface ProbeError {
  server: number;
  at: number;
  error: string;
}

/** The running probes (see the module comment). */
export interface JetStreamProbes {
  /** The longest time in [t0, t1] without a completed publish and read on any of `servers`
   * (measured like a node's stall: from t0 or a success to the next success, or to t1). */
  stall(t0: number, t1: number, servers: number[]): number;
  /** The failures in [t0, t1], each kind once per server with its count and first time. */
  errors(
    t0: number,
    t1: number,
  ): { server: number; error: string; count: number; first: number; last: number }[];
  stop(): Promise<void>;
}

/** What a failed request said, short: JetStream's error code when it gave one. */
function describe(err: unknown): string {
  const api =
    (err as { api_error?: { code?: number; err_code?: number; description?: string } }).api_error;
  if (api) return `${api.code} ${api.description ?? ""} (${api.err_code})`;
  const code = (err as { code?: string }).code;
  if (code === "503") return "503 no responders";
  if (code === "TIMEOUT") return "timeout";
  return (err instanceof Error ? err.message : String(err)).slice(0, 80);
}

/**
 * Reads position `seq` of the stream as a node does: the first answer other than a 10008
 * within `ms` (a 10008 alone fails when the wait ends, nats.js's first-answer request failed
 * at once); the message's data.
 */
function readAt(nc: NatsConnection, seq: number, ms: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    let unavailable: unknown;
    const inbox = createInbox();
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      sub.unsubscribe();
      settle();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(unavailable ?? Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" }))
        ),
      ms,
    );
    const sub = nc.subscribe(inbox, {
      callback: (_err, m: Msg) => {
        if (m.data.length === 0 && m.headers?.code === 503) {
          return finish(() => reject(Object.assign(new Error("503"), { code: "503" })));
        }
        let r: { error?: { err_code?: number }; message?: { data?: string } };
        try {
          r = JSON.parse(new TextDecoder().decode(m.data));
        } catch (err) {
          return finish(() => reject(err));
        }
        if (r.error?.err_code === 10008) return void (unavailable = { api_error: r.error });
        if (r.error) return finish(() => reject({ api_error: r.error }));
        finish(() => resolve(Uint8Array.from(atob(r.message?.data ?? ""), (c) => c.charCodeAt(0))));
      },
    });
    nc.publish(`$JS.API.STREAM.MSG.GET.${STREAM}`, JSON.stringify({ seq }), { reply: inbox });
  });
}

/** Starts one probe per server of `urls`. */
export function startProbes(urls: string[]): JetStreamProbes {
  const ok: number[][] = urls.map(() => []);
  const errors: ProbeError[] = [];
  let stopped = false;
  const conns: NatsConnection[] = [];
  const run = async (server: number) => {
    // Pinned: a probe on a frozen server stays there (the others say whether JetStream works).
    const nc = await connect({
      servers: [urls[server]],
      noRandomize: true,
      ignoreClusterUpdates: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 2000,
      pingInterval: 1000,
      maxPingOut: 3,
    });
    conns.push(nc);
    let js: JetStreamClient | undefined;
    let n = 0;
    while (!stopped) {
      const id = `nemesis-probe-${server}-${Date.now()}-${n++}`;
      const data = codec.pack({
        o: `nemesis-probe-${server}`,
        b: id,
        base: -1e9,
        r: { p: [], g: [], a: [] },
        w: [],
      });
      // Until stored and read back (or stopped): the same message id on every try.
      for (;;) {
        if (stopped) return;
        try {
          js ??= nc.jetstream({ timeout: TRY_MS });
          const ack = await js.publish(SUBJECT, data, { msgID: id, timeout: TRY_MS });
          const stored = codec.unpack(await readAt(nc, ack.seq, TRY_MS)) as { b?: string };
          if (stored.b !== id) throw new Error(`position ${ack.seq} holds another message`);
          ok[server].push(Date.now());
          break;
        } catch (err) {
          errors.push({ server, at: Date.now(), error: describe(err) });
          await sleep(50);
        }
      }
      await sleep(EVERY_MS);
    }
  };
  const running = urls.map((_, i) =>
    run(i).catch((err) =>
      errors.push({ server: i, at: Date.now(), error: `probe ended: ${describe(err)}` })
    )
  );
  return {
    stall(t0, t1, servers) {
      const times = servers.flatMap((s) => ok[s]).filter((t) => t > t0 && t <= t1).sort((a, b) =>
        a - b
      );
      let last = t0;
      let worst = 0;
      for (const t of times) {
        worst = Math.max(worst, t - last);
        last = t;
      }
      return Math.max(worst, t1 - last);
    },
    errors(t0, t1) {
      const kinds = new Map<
        string,
        { server: number; error: string; count: number; first: number; last: number }
      >();
      for (const e of errors) {
        if (e.at < t0 || e.at > t1) continue;
        const key = `${e.server} ${e.error}`;
        const k = kinds.get(key);
        if (k) {
          k.count++;
          k.last = e.at;
        } else {kinds.set(key, {
            server: e.server,
            error: e.error,
            count: 1,
            first: e.at,
            last: e.at,
          });}
      }
      return [...kinds.values()];
    },
    async stop() {
      stopped = true;
      for (const nc of conns) await nc.close().catch(() => {});
      await Promise.all(running);
    },
  };
}
