// A raw Phoenix V2 client over the runtime's WebSocket, for tests that check exact frames.
import { Packr } from "msgpackr";

/** `[join_ref, ref, topic, event, payload]`. */
export type Frame = [string | null, string | null, string, string, Record<string, unknown>];

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A connected raw socket that records every frame it receives. */
export class RawSocket {
  frames: Frame[] = [];
  socketId = "";
  closeEvent?: CloseEvent;
  #ws: WebSocket;
  #ref = 0;
  #waiters: (() => void)[] = [];
  #msgpack: boolean;

  private constructor(ws: WebSocket, msgpack: boolean) {
    this.#ws = ws;
    this.#msgpack = msgpack;
    ws.binaryType = "arraybuffer";
    ws.onmessage = (e) => {
      const frame =
        (typeof e.data === "string"
          ? JSON.parse(e.data)
          : packr.unpack(new Uint8Array(e.data))) as Frame;
      this.frames.push(frame);
      for (const w of this.#waiters.splice(0)) w();
    };
    ws.onclose = (e) => {
      this.closeEvent = e;
      for (const w of this.#waiters.splice(0)) w();
    };
  }

  /** Opens a socket and waits for the `connected` first frame. */
  static async connect(url: string): Promise<RawSocket> {
    const msgpack = url.includes("format=msgpack");
    const ws = new WebSocket(url);
    const sock = new RawSocket(ws, msgpack);
    await new Promise<void>((resolve, reject) => {
      ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
      ws.onopen = () => resolve();
    });
    const first = await sock.waitFor((f) => f[3] === "connected");
    sock.socketId = String(first[4].socket_id);
    return sock;
  }

  /** Sends a frame (any value, for malformed-frame tests). */
  sendRaw(data: unknown): void {
    this.#ws.send(data as string);
  }

  /** Sends a frame in this socket's format; returns the ref used. */
  send(
    joinRef: string | null,
    topic: string,
    event: string,
    payload: unknown,
    ref = String(++this.#ref),
  ): string {
    const frame = [joinRef, ref, topic, event, payload];
    this.#ws.send(this.#msgpack ? packr.pack(frame) : JSON.stringify(frame));
    return ref;
  }

  /** Joins and resolves with the reply payload `{ status, response }` (waits `timeoutMs`). */
  async join(
    topic: string,
    params: Record<string, unknown> = {},
    timeoutMs?: number,
  ): Promise<{ status: string; response: Record<string, unknown>; joinRef: string }> {
    const ref = String(++this.#ref);
    this.send(ref, topic, "phx_join", params, ref);
    const reply = await this.waitFor(
      (f) => f[3] === "phx_reply" && f[1] === ref && f[2] === topic,
      timeoutMs,
    );
    return { ...(reply[4] as { status: string; response: Record<string, unknown> }), joinRef: ref };
  }

  /** Pushes an event on a joined topic and resolves with the reply payload. */
  async push(
    topic: string,
    joinRef: string,
    event: string,
    payload: unknown,
  ): Promise<{ status: string; response: Record<string, unknown> }> {
    const ref = this.send(joinRef, topic, event, payload);
    const reply = await this.waitFor((f) => f[3] === "phx_reply" && f[1] === ref);
    return reply[4] as { status: string; response: Record<string, unknown> };
  }

  /**
   * Waits for a received frame matching `pred`, scanning from the start; by default up to 30 s
   * (a bound for a loaded machine, not a timing expectation).
   */
  async waitFor(pred: (f: Frame) => boolean, timeoutMs = 30_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const found = this.frames.find(pred);
      if (found) return found;
      if (this.closeEvent) {
        throw new Error(
          `socket closed (${this.closeEvent.code} ${this.closeEvent.reason}) while waiting`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out; frames: ${JSON.stringify(this.frames.slice(-10))}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits until the server closes the socket. */
  async closed(timeoutMs = 30_000): Promise<CloseEvent> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closeEvent) {
      if (Date.now() > deadline) throw new Error("socket did not close");
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closeEvent;
  }

  /** Frames received on `topic` with event `event`. */
  events(topic: string, event?: string): Frame[] {
    return this.frames.filter((f) => f[2] === topic && (event === undefined || f[3] === event));
  }

  /** Closes the socket and waits for the close. */
  async close(): Promise<void> {
    if (this.closeEvent) return;
    this.#ws.close();
    await this.closed().catch(() => {});
  }
}
