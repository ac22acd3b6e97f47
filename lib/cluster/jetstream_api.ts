/**
 * The link's JetStream requests (appends, reads of the log, its bounds): each ends at once when
 * the connection is lost, and one sent while the stream had no working leader is sent again as
 * soon as JetStream answers a later one (`#answered`).
 */
import {
  createInbox,
  type JetStreamClient,
  type Msg,
  type NatsConnection,
  type PubAck,
} from "nats";
import { log } from "../log/mod.ts";

/** How long an API request may wait for its answer, and for a better one after a 10008;
 * see `#answered` for the rest. */
const API_MS = 2000;
const API_GRACE_MS = 750;
const RESEND_GAP_MS = 100;
const TROUBLED_MS = 1000;
const MAX_RESENDS = 3;

/** A request waiting for its answer: when and how often it was sent, how to send it again,
 * and how to end it when the connection is lost (its answer cannot come). */
interface Pending {
  firstAt: number;
  sentAt: number;
  resends: number;
  send(): void;
  lost(): void;
}

/** A JetStream API error answer. */
export interface ApiError {
  code?: number;
  err_code?: number;
  description?: string;
}

/** See the module comment. */
export class JetStreamRequests {
  /** When JetStream last answered an API request on this connection. */
  answeredAt = 0;
  #nc: NatsConnection;
  #refused: () => void;
  /** The replies' subject prefix, and the waiting requests by their subject's last token. */
  #inbox = createInbox();
  #seq = 0;
  #waiting = new Map<string, (m: Msg) => void>();
  #pending = new Set<Pending>();
  /** When JetStream was last seen failing a request. */
  #failedAt = 0;

  /** `refused` is called when a server refused a request with 10008 and none answered better. */
  constructor(nc: NatsConnection, refused: () => void) {
    this.#nc = nc;
    this.#refused = refused;
    // One subscription for every answer (not an interest change per request).
    nc.subscribe(`${this.#inbox}.*`, {
      callback: (_err, m) => this.#waiting.get(m.subject.slice(this.#inbox.length + 1))?.(m),
    });
  }

  /** The connection was lost: every request in flight ends now. */
  lost(): void {
    this.#failedAt = Date.now();
    for (const p of this.#pending) p.lost();
  }

  /** Publishes `data` under message id `msgID` (a resend is stored once); its ack, or null when
   * the connection was lost first (the caller retries on the next server at once). */
  publish(
    js: JetStreamClient,
    subject: string,
    data: Uint8Array,
    msgID: string,
    timeoutMs: number,
  ): Promise<PubAck | null> {
    const deadline = Date.now() + Math.max(100, timeoutMs);
    return new Promise((resolve, reject) => {
      let running = 0;
      const finish = (settle: () => void) => {
        if (!this.#pending.delete(pending)) return false;
        settle();
        return true;
      };
      const send = () => {
        running++;
        const sentAt = Date.now();
        js.publish(subject, data, { msgID, timeout: Math.max(100, deadline - sentAt) }).then(
          (ack) => {
            if (finish(() => resolve(ack))) this.#answered(sentAt);
          },
          (err) => {
            this.#failedAt = Date.now();
            if (--running === 0) finish(() => reject(err));
          },
        );
      };
      const pending = this.#track(send, () => finish(() => resolve(null)));
      send();
    });
  }

  /** An API request answered by the stream's leader: nats.js takes the first answer, but with
   * nats-server 2.9.10 a server that lost JetStream's meta leader answers 10008 ("temporarily
   * unavailable") at once, before the leader. So a 10008 stands only if no other answer came
   * within `API_GRACE_MS`. */
  api(subject: string, body: unknown, timeoutMs = API_MS): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const token = String(++this.#seq);
      let unavailable: ApiError | undefined;
      let grace: ReturnType<typeof setTimeout> | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finish = (settle: () => void) => {
        if (!this.#waiting.delete(token)) return;
        clearTimeout(timer);
        clearTimeout(grace);
        this.#pending.delete(pending);
        settle();
      };
      const fail = (err: unknown) => {
        this.#failedAt = Date.now();
        finish(() => reject(err));
      };
      this.#waiting.set(token, (m) => {
        if (m.data.length === 0 && m.headers?.code === 503) {
          return fail(Object.assign(new Error("503"), { code: "503" })); // no responders
        }
        let r: Record<string, unknown> & { error?: ApiError };
        try {
          r = JSON.parse(new TextDecoder().decode(m.data));
        } catch (e) {
          return fail(e);
        }
        if (r.error?.err_code === 10008) {
          this.#failedAt = Date.now();
          unavailable = r.error;
          grace ??= setTimeout(() => {
            fail(apiError(unavailable!));
            this.#refused();
          }, API_GRACE_MS);
          return;
        }
        // Any other answer, an error included (10037: no message there), is the leader's.
        if (r.error) finish(() => reject(apiError(r.error!)));
        else finish(() => resolve(r));
        this.answeredAt = Date.now();
        this.#answered(pending.firstAt);
      });
      // Each send (same reply subject) leaves at least the grace before the timeout.
      const deadline = Date.now() + timeoutMs;
      const send = () => {
        clearTimeout(timer);
        clearTimeout(grace);
        grace = undefined;
        timer = setTimeout(
          () =>
            fail(
              unavailable
                ? apiError(unavailable)
                : Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" }),
            ),
          Math.max(deadline - Date.now(), API_GRACE_MS),
        );
        try {
          this.#nc.publish(subject, new TextEncoder().encode(JSON.stringify(body)), {
            reply: `${this.#inbox}.${token}`,
          });
        } catch (err) {
          fail(err);
        }
      };
      const pending = this.#track(send, () => fail(new Error("NATS connection lost")));
      send();
    });
  }

  /** Registers a new request (see `Pending`). */
  #track(send: () => void, lost: () => void): Pending {
    const p = { firstAt: Date.now(), sentAt: Date.now(), resends: 0, send, lost };
    this.#pending.add(p);
    return p;
  }

  /** JetStream answered a request sent at `sentAt`. Requests sent while the stream had no
   * leader are dropped, never answered; so each still waiting, sent `RESEND_GAP_MS` before this
   * one while JetStream was failing (up to `TROUBLED_MS` after a failure), is sent again, at most
   * `MAX_RESENDS` times (reads are idempotent, a publish is stored once under its id). */
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
}

/** An error carrying JetStream's answer as nats.js's do (`api_error`). */
export function apiError(e: ApiError): Error {
  return Object.assign(new Error(`${e.code ?? ""} ${e.description ?? ""}`.trim()), {
    api_error: e,
  });
}

/** An error's text, with JetStream's own description when it gave one (nats.js names both
 * "no responders" and "JetStream temporarily unavailable" just `503`). */
export function describe(err: unknown): string {
  const api = (err as { api_error?: ApiError }).api_error;
  if (api) return `JetStream ${api.code} ${api.description ?? ""} (${api.err_code})`;
  if ((err as { code?: string }).code === "503") return "503 no responders";
  return err instanceof Error ? err.message : String(err);
}
