// Baseline: a plain npm `ws` broadcast server under node. Same routes and wire shape as
// bun_pubsub_server.ts; fan-out is a JS loop calling `socket.send` with bytes encoded once.
//   GET  /ws?channel=NAME   WebSocket, added to NAME's set on open
//   POST /publish           {channel, event, data} -> {serial}
// Run: node bench/baselines/ws_broadcast_server.mjs [port]
import { createServer } from "node:http";
import { WebSocketServer } from "ws";

const channels = new Map();
const serials = new Map();
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });

const server = createServer((req, res) => {
  if (req.method === "POST" && req.url === "/publish") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const { channel, event, data } = JSON.parse(Buffer.concat(chunks).toString());
      const serial = (serials.get(channel) ?? 0) + 1;
      serials.set(channel, serial);
      const frame = Buffer.from(JSON.stringify([null, null, channel, event, { serial, data }]));
      const set = channels.get(channel);
      if (set) { for (const ws of set) if (ws.readyState === 1) ws.send(frame, { binary: false }); }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ serial }));
    });
    return;
  }
  res.writeHead(req.url === "/healthz" ? 200 : 404);
  res.end();
});

server.on("upgrade", (req, socket, head) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname !== "/ws") return socket.destroy();
  const channel = url.searchParams.get("channel") ?? "default";
  wss.handleUpgrade(req, socket, head, (ws) => {
    let set = channels.get(channel);
    if (!set) channels.set(channel, set = new Set());
    set.add(ws);
    ws.on("close", () => set.delete(ws));
    ws.on("error", () => {});
  });
});

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`ws broadcast baseline listening on http://127.0.0.1:${server.address().port}`);
});
