// Peer: a Socket.IO server under node (the library many real-time apps use). Same publish route
// as the other baselines; subscribers join a room per channel, and a publish emits to the room.
//   WebSocket /socket.io/?EIO=4&transport=websocket, then emit("join", channel)
//   POST /publish           {channel, event, data} -> {serial}
// Run: node bench/baselines/socketio_server.mjs [port]
import { createServer } from "node:http";
import { Server } from "socket.io";

const serials = new Map();
const server = createServer();
const io = new Server(server, {
  transports: ["websocket"],
  perMessageDeflate: false,
  serveClient: false,
});

io.on("connection", (socket) => {
  socket.on("join", (channel) => socket.join(String(channel)));
});

server.on("request", (req, res) => {
  if (req.url?.startsWith("/socket.io/")) return; // engine.io answers these
  if (req.method === "POST" && req.url === "/publish") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const { channel, event, data } = JSON.parse(Buffer.concat(chunks).toString());
      const serial = (serials.get(channel) ?? 0) + 1;
      serials.set(channel, serial);
      io.to(channel).emit(event, { serial, data });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ serial }));
    });
    return;
  }
  res.writeHead(req.url === "/healthz" ? 200 : 404);
  res.end();
});

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`socket.io peer listening on http://127.0.0.1:${server.address().port}`);
});
