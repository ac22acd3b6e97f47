// Peer: core NATS pub/sub over WebSocket (nats-server from Debian, found on PATH). This Bun
// process starts nats-server with a WebSocket listener and serves the same HTTP publish route
// as the other baselines, forwarding each publish as one NATS PUB (no persistence: core NATS).
//   subscribers: ws://127.0.0.1:WSPORT, NATS protocol (CONNECT, SUB channel)
//   POST /publish {channel, event, data} -> {serial}
// Prints "nats peer listening on http://127.0.0.1:PORT ws WSPORT".
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

declare const Bun: { serve(o: unknown): { port: number } };
declare const process: {
  env: Record<string, string | undefined>;
  on(s: string, f: () => void): void;
  exit(c: number): never;
};

const bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find(
  existsSync,
);
if (!bin) {
  console.error("nats-server not found (Debian: apt-get install nats-server)");
  process.exit(3);
}
const free = () =>
  new Promise<number>((resolve) => {
    const s =
      (globalThis as unknown as { Bun: { listen(o: unknown): { port: number; stop(): void } } }).Bun
        .listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = s.port;
    s.stop();
    resolve(port);
  });
const natsPort = await free();
const wsPort = await free();
const dir = mkdtempSync(join(tmpdir(), "sb-bench-nats-"));
const conf = join(dir, "nats.conf");
writeFileSync(
  conf,
  `listen: 127.0.0.1:${natsPort}\nwebsocket {\n  listen: "127.0.0.1:${wsPort}"\n  no_tls: true\n  compression: false\n}\n`,
);
const child = spawn(bin, ["-c", conf], { stdio: ["ignore", "pipe", "pipe"] });
await new Promise<void>((resolve, reject) => {
  let out = "";
  const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${out}`)), 10_000);
  const on = (d: Uint8Array) => {
    out += new TextDecoder().decode(d);
    if (/Server is ready/.test(out)) {
      clearTimeout(timer);
      resolve();
    }
  };
  child.stdout!.on("data", on);
  child.stderr!.on("data", on);
});
const stop = () => {
  child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

const nats = connect(natsPort, "127.0.0.1");
await new Promise((r) => nats.on("connect", r));
nats.setNoDelay(true);
nats.on("data", (d: Uint8Array) => {
  if (new TextDecoder().decode(d).includes("PING")) nats.write("PONG\r\n");
});
nats.write(`CONNECT {"verbose":false,"pedantic":false}\r\n`);

const serials = new Map<string, number>();
const encoder = new TextEncoder();
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req: Request) {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/publish") {
      const { channel, event, data } = await req.json();
      const serial = (serials.get(channel) ?? 0) + 1;
      serials.set(channel, serial);
      const payload = JSON.stringify([null, null, channel, event, { serial, data }]);
      nats.write(`PUB ${channel} ${encoder.encode(payload).byteLength}\r\n${payload}\r\n`);
      return Response.json({ serial });
    }
    return new Response(null, { status: url.pathname === "/healthz" ? 200 : 404 });
  },
});
console.log(`nats peer listening on http://127.0.0.1:${server.port} ws ${wsPort}`);
