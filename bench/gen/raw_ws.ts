// A minimal WebSocket client over Bun's TCP sockets (`Bun.connect`), for generators that handle
// many small frames (token streaming). It skips what the built-in client does per message (an
// event object, a UTF-8 decode, dispatch): each text frame reaches `onFrame` as bytes, and
// `onText` as a Latin-1 string when `onFrame` leaves it (exact for the ASCII frames the
// generators read).
// Client frames are masked as RFC 6455 requires; pings are answered; fragmented messages and
// extensions are not supported (the server sends neither: no permessage-deflate is offered).

import { Buffer } from "node:buffer";

// deno-lint-ignore no-explicit-any
declare const Bun: any;
// deno-lint-ignore no-explicit-any
type TcpSocket = any;

const EMPTY = Buffer.alloc(0);
const HANDSHAKE_END = "\r\n\r\n";

/** One WebSocket connection; see the module comment. */
export class RawWebSocket {
  #socket: TcpSocket;
  /** Bytes received and not yet parsed (a partial frame, or the handshake). */
  #pending: Buffer = EMPTY;
  /** Bytes the kernel did not take yet, written on `drain` in order. */
  #unsent: Uint8Array[] = [];
  #open = false;
  #opened: (() => void) | null = null;
  #failed: ((err: Error) => void) | null = null;
  /** Sees each text frame's bytes first (`buf[start, end)`, valid during the call only); true
   * when it has handled the frame. */
  onFrame: (buf: Buffer, start: number, end: number) => boolean = () => false;
  /** Every text frame `onFrame` did not handle, as a Latin-1 string. */
  onText: (text: string) => void = () => {};
  /** The connection ended (either side). */
  onClose: () => void = () => {};

  private constructor() {}

  /** Connects to `url` (`ws://host:port/path?query`) and completes the opening handshake. */
  static async connect(url: string): Promise<RawWebSocket> {
    const u = new URL(url);
    const ws = new RawWebSocket();
    const ready = new Promise<void>((resolve, reject) => {
      ws.#opened = resolve;
      ws.#failed = reject;
    });
    ws.#socket = await Bun.connect({
      hostname: u.hostname,
      port: Number(u.port),
      socket: {
        data: (_s: TcpSocket, data: Buffer) => ws.#receive(data),
        drain: () => ws.#flush(),
        close: () => ws.#closed(new Error("closed")),
        error: (_s: TcpSocket, err: Error) => ws.#closed(err),
      },
    });
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    ws.#write(
      `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await ready;
    return ws;
  }

  /** Sends `text` as one masked text frame. */
  send(text: string): void {
    this.#frame(1, text);
  }

  /** Closes the connection without the closing handshake (the generator is done with it). */
  close(): void {
    this.onClose = () => {};
    this.#socket.end();
  }

  #closed(err: Error): void {
    if (!this.#open) this.#failed?.(err);
    this.#open = false;
    this.onClose();
  }

  #receive(data: Buffer): void {
    const buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, data]) : data;
    let at = 0;
    if (!this.#open) {
      const end = buf.indexOf(HANDSHAKE_END);
      if (end < 0) return void (this.#pending = Buffer.from(buf));
      const status = buf.toString("latin1", 0, end).split("\r\n")[0];
      if (!/^HTTP\/1\.1 101/.test(status)) {
        return this.#failed?.(new Error(`upgrade refused: ${status}`));
      }
      this.#open = true;
      this.#opened?.();
      at = end + 4;
    }
    while (buf.length - at >= 2) {
      const opcode = buf[at] & 0x0f;
      let length = buf[at + 1] & 0x7f;
      let header = 2;
      if (length === 126) {
        if (buf.length - at < 4) break;
        length = (buf[at + 2] << 8) | buf[at + 3];
        header = 4;
      } else if (length === 127) {
        if (buf.length - at < 10) break;
        length = Number(new DataView(buf.buffer, buf.byteOffset + at + 2, 8).getBigUint64(0));
        header = 10;
      }
      if (buf.length - at < header + length) break;
      const start = at + header;
      at = start + length;
      if (opcode === 1) {
        if (!this.onFrame(buf, start, at)) this.onText(buf.toString("latin1", start, at));
      } else if (opcode === 9) this.#frame(10, buf.subarray(start, at));
      else if (opcode === 8) this.#socket.end();
    }
    // Bun reuses the buffer it hands to `data`: keep a copy of what is left.
    this.#pending = at === buf.length ? EMPTY : Buffer.from(buf.subarray(at));
  }

  /** Writes `data` after anything still unsent; what the kernel does not take waits for `drain`. */
  #write(data: string | Uint8Array): void {
    this.#unsent.push(typeof data === "string" ? Buffer.from(data, "latin1") : data);
    if (this.#unsent.length === 1) this.#flush();
  }

  /** Writes unsent bytes until the kernel stops taking them. */
  #flush(): void {
    while (this.#unsent.length > 0) {
      const bytes = this.#unsent[0];
      const written = Math.max(0, this.#socket.write(bytes));
      if (written < bytes.length) {
        this.#unsent[0] = bytes.subarray(written);
        return;
      }
      this.#unsent.shift();
    }
  }

  /** Writes one masked frame (FIN set) of `opcode` carrying `payload` (a string as UTF-8). */
  #frame(opcode: number, payload: string | Uint8Array): void {
    const n = typeof payload === "string" ? Buffer.byteLength(payload) : payload.length;
    const header = n < 126 ? 2 : n < 65536 ? 4 : 10;
    const out = Buffer.allocUnsafe(header + 4 + n);
    out[0] = 0x80 | opcode;
    if (n < 126) out[1] = 0x80 | n;
    else if (n < 65536) {
      out[1] = 0x80 | 126;
      out[2] = n >> 8;
      out[3] = n & 0xff;
    } else {
      out[1] = 0x80 | 127;
      out.writeBigUInt64BE(BigInt(n), 2);
    }
    const mask = crypto.getRandomValues(new Uint8Array(4));
    out.set(mask, header);
    const body = header + 4;
    if (typeof payload === "string") out.write(payload, body, "utf8");
    else out.set(payload, body);
    for (let i = 0; i < n; i++) out[body + i] ^= mask[i & 3];
    this.#write(out);
  }
}
