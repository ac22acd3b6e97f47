// A minimal HTTP/1.1 client over one keep-alive TCP socket (Bun, node:net), for load
// generators whose own `fetch` would saturate their core before the server does. Requests may
// be pipelined: replies come back in order, each matched to the oldest waiting request. Only
// replies with a Content-Length are understood (what Switchboard and the baselines send).
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";

/** A reply: status code and body text. */
export interface Reply {
  status: number;
  body: string;
}

const HEAD_END = Buffer.from("\r\n\r\n");

/** One keep-alive connection; see the module comment. */
export class Http1Conn {
  #sock: Socket;
  #host: string;
  #buf: Buffer = Buffer.alloc(0);
  #waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  #closed: Error | null = null;

  private constructor(sock: Socket, host: string) {
    this.#sock = sock;
    this.#host = host;
    sock.setNoDelay(true);
    sock.on("data", (d: Buffer) => this.#data(d));
    const fail = (e: Error) => {
      this.#closed = e;
      for (const w of this.#waiting.splice(0)) w.reject(e);
    };
    sock.on("error", fail);
    sock.on("close", () => fail(new Error("connection closed")));
  }

  /** Opens a connection to `base` (http://host:port). */
  static open(base: string): Promise<Http1Conn> {
    const url = new URL(base);
    return new Promise((resolve, reject) => {
      const sock = connect(Number(url.port), url.hostname);
      sock.once("error", reject);
      sock.once("connect", () => resolve(new Http1Conn(sock, url.host)));
    });
  }

  /** Sends one request (pipelined behind any still waiting) and resolves with its reply. */
  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body = "",
  ): Promise<Reply> {
    if (this.#closed) return Promise.reject(this.#closed);
    let head = `${method} ${path} HTTP/1.1\r\nhost: ${this.#host}\r\n`;
    for (const k in headers) head += `${k}: ${headers[k]}\r\n`;
    head += `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#sock.write(head + body);
    });
  }

  /** Closes the socket. */
  close(): void {
    this.#sock.destroy();
  }

  #data(d: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : d;
    while (this.#buf.length) {
      const end = this.#buf.indexOf(HEAD_END);
      if (end < 0) return;
      const head = this.#buf.subarray(0, end).toString("latin1");
      const m = /content-length:\s*(\d+)/i.exec(head);
      if (!m) {
        this.#waiting.shift()?.reject(
          new Error(`reply without content-length: ${head.slice(0, 200)}`),
        );
        this.#sock.destroy();
        return;
      }
      const total = end + 4 + Number(m[1]);
      if (this.#buf.length < total) return;
      const status = Number(head.slice(9, 12));
      const body = this.#buf.subarray(end + 4, total).toString("utf8");
      this.#buf = this.#buf.subarray(total);
      this.#waiting.shift()?.resolve({ status, body });
    }
  }
}

/** Keep-alive connections to one server: each request takes an idle one, or opens another, so
 * no request waits behind another's reply. */
export class Http1Pool {
  #base: string;
  #idle: Http1Conn[] = [];

  /** A pool for `base` (http://host:port), with no connection open yet. */
  constructor(base: string) {
    this.#base = base;
  }

  /** Sends one request on an idle connection (or a new one) and resolves with its reply. */
  async request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body = "",
  ): Promise<Reply> {
    const conn = this.#idle.pop() ?? await Http1Conn.open(this.#base);
    const reply = await conn.request(method, path, headers, body);
    this.#idle.push(conn);
    return reply;
  }

  /** Closes every idle connection. */
  close(): void {
    for (const c of this.#idle.splice(0)) c.close();
  }
}
