// Redis peer of the durable-write benchmark (Bun): `concurrency` closed-loop writers, each on
// its own connection, send INCR to one hot key or across `objects` keys; with
// `appendfsync always` Redis replies only after the write is fsynced, as Switchboard does.
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import { closedLoop, config, done, type PeerWriteConfig } from "./common.ts";

const cfg = config<PeerWriteConfig>();
let errors = 0;

/** One RESP connection with one command in flight. */
function open(): Promise<{ send(cmd: string[]): Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(cfg.port, "127.0.0.1");
    let buf = "";
    let waiting: ((line: string) => void) | null = null;
    sock.setNoDelay(true);
    sock.on("data", (d: Uint8Array) => {
      buf += new TextDecoder().decode(d);
      const end = buf.indexOf("\r\n");
      if (end >= 0 && waiting) {
        const line = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const w = waiting;
        waiting = null;
        w(line);
      }
    });
    sock.on("error", reject);
    sock.on("connect", () =>
      resolve({
        send: (cmd) =>
          new Promise((r) => {
            waiting = r;
            sock.write(
              `*${cmd.length}\r\n${
                cmd.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")
              }`,
            );
          }),
        close: () => sock.destroy(),
      }));
  });
}

const conns = await Promise.all(Array.from({ length: cfg.concurrency }, () => open()));
const r = await closedLoop(cfg, async (w, n) => {
  const key = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
  const reply = await conns[w].send(["INCR", key]);
  if (reply.startsWith(":")) return true;
  errors++;
  return false;
});
for (const c of conns) c.close();
done({ ...r, errors });
