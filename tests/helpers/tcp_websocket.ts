// A minimal WebSocket client over a raw TCP socket, for tests that need what browser-style
// clients cannot do: stop reading (so the server's queue fills) and read again later.
import { connect, type Socket } from "node:net";
import { Buffer } from "node:buffer";

/** One server frame: opcode and payload. */
export interface WsFrame {
  opcode: number;
  payload: Buffer;
}

/** A raw WebSocket whose reading can be paused and resumed. */
export class TcpWebSocket {
  #sock: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #frames: WsFrame[] = [];
  #wake: (() => void) | undefined;
  #ended = false;

  private constructor(sock: Socket) {
    this.#sock = sock;
    sock.on("data", (chunk: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, chunk]);
      this.#parse();
      this.#wake?.();
    });
    sock.on("close", () => {
      this.#ended = true;
      this.#wake?.();
    });
    sock.on("error", () => {});
  }

  /** Connects and completes the upgrade handshake for `path` (e.g. `/socket/websocket?...`);
   * `headers` are added to the upgrade request (e.g. an Origin). */
  static async open(
    port: number,
    path: string,
    headers: Record<string, string> = {},
  ): Promise<TcpWebSocket> {
    const sock = connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => {
      sock.once("connect", () => resolve());
      sock.once("error", reject);
    });
    const key = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
    sock.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
        Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n",
    );
    let head = Buffer.alloc(0);
    const rest = await new Promise<Buffer>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        sock.off("data", onData);
        const status = head.subarray(0, head.indexOf("\r\n")).toString();
        if (!status.includes(" 101 ")) {
          sock.destroy();
          reject(new Error(`upgrade refused: ${status}`));
        } else resolve(head.subarray(end + 4));
      };
      sock.on("data", onData);
    });
    const ws = new TcpWebSocket(sock);
    if (rest.length) {
      ws.#buf = rest;
      ws.#parse();
    }
    return ws;
  }

  /** Sends one masked text frame. */
  sendText(text: string): void {
    const payload = Buffer.from(text);
    const mask = Buffer.from(crypto.getRandomValues(new Uint8Array(4)));
    const len = payload.length;
    const header = len < 126
      ? Buffer.from([0x81, 0x80 | len])
      : len < 65536
      ? Buffer.from([0x81, 0x80 | 126, len >> 8, len & 0xff])
      : (() => {
        const h = Buffer.alloc(10);
        h[0] = 0x81;
        h[1] = 0x80 | 127;
        h.writeBigUInt64BE(BigInt(len), 2);
        return h;
      })();
    const masked = Buffer.alloc(len);
    for (let i = 0; i < len; i++) masked[i] = payload[i] ^ mask[i & 3];
    this.#sock.write(Buffer.concat([header, mask, masked]));
  }

  /** Stops reading from the network: the kernel buffers fill, then the server's queue grows. */
  pause(): void {
    this.#sock.pause();
  }

  /** Reads again. */
  resume(): void {
    this.#sock.resume();
  }

  /** Waits (bounded) for the next frame; null when the connection ended. */
  async next(timeoutMs = 10_000): Promise<WsFrame | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.#frames.length === 0) {
      if (this.#ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("timed out waiting for a frame");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return this.#frames.shift()!;
  }

  /** Closes the TCP connection. */
  destroy(): void {
    this.#sock.destroy();
  }

  #parse(): void {
    while (this.#buf.length >= 2) {
      const b = this.#buf;
      let len = b[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        off = 10;
      }
      if (b.length < off + len) return;
      this.#frames.push({ opcode: b[0] & 0x0f, payload: Buffer.from(b.subarray(off, off + len)) });
      this.#buf = b.subarray(off + len);
    }
  }
}
