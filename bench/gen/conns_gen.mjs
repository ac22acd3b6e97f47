// Idle-connection generator: opens `count` sockets, each joining its own channel. Under Bun it
// uses Bun's fast native WebSocket client (one source address); under node it uses npm ws,
// which can bind 127.0.0.x source addresses when one address would run out of ephemeral
// ports. Reports the connect+join rate, prints "@mark start" as it begins connecting and
// "@mark ready" once all are joined, holds them `holdMs`, then closes.
const isBun = typeof globalThis.Bun !== "undefined";
const WebSocket = isBun ? globalThis.WebSocket : (await import("ws")).default;
const cpu0 = process.cpuUsage();

const cfg = JSON.parse(process.env.BENCH_CONFIG ?? "{}");
const { base, count, concurrency = 200, holdMs = 3000, offset = 0, perAddress = 25000 } = cfg;
const url = `${base.replace("http", "ws")}/socket/websocket?app_key=key1&vsn=2.0.0`;
const sockets = [];
let failures = 0;

function open(i) {
  const localAddress = `127.0.0.${1 + Math.floor((offset + i) / perAddress)}`;
  return new Promise((resolve) => {
    const ws = isBun
      ? new WebSocket(url)
      : new WebSocket(url, { localAddress, perMessageDeflate: false });
    const topic = `pubsub:key1:idle-${offset + i}`;
    const timer = setTimeout(() => fail("timeout"), 30_000);
    const fail = (why) => {
      clearTimeout(timer);
      if (++failures <= 3) process.stderr.write(`socket ${i} (${localAddress}): ${why}\n`);
      ws.close();
      resolve();
    };
    const on = (
      name,
      fn,
    ) => (isBun
      ? ws.addEventListener(name, (e) => fn(name === "message" ? e.data : e))
      : ws.on(name, fn));
    on("error", (e) => fail(String(e?.message ?? e)));
    on("message", (data) => {
      const s = data.toString();
      if (s.includes('"connected"')) ws.send(JSON.stringify(["1", "1", topic, "phx_join", {}]));
      else if (s.startsWith('["1","1"')) {
        clearTimeout(timer);
        if (!s.includes('"ok"')) return fail(s);
        sockets.push(ws);
        resolve();
      }
    });
  });
}

process.stderr.write("@mark start\n");
const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
  while (next < count) await open(next++);
}));
const seconds = (performance.now() - t0) / 1000;
const used = process.cpuUsage(cpu0);
const genCpu = (used.user + used.system) / 1e6 / seconds;
process.stderr.write("@mark ready\n");
await new Promise((r) => setTimeout(r, holdMs));
const stillOpen = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length;
for (const ws of sockets) ws.close();
console.log(
  JSON.stringify({
    joined: sockets.length,
    failures,
    seconds,
    perSecond: sockets.length / seconds,
    stillOpen,
    genCpu,
  }),
);
process.exit(0);
