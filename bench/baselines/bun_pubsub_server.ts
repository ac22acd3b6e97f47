// Baseline: a bare Bun WebSocket server doing channel fan-out with native topics
// (`ws.subscribe` + `server.publish`). Same wire shape as Switchboard's channel events:
// `[null, null, channel, event, {serial, data}]`, encoded once per publish.
//   GET  /ws?channel=NAME   WebSocket, subscribed to NAME on open
//   POST /publish           {channel, event, data} -> {serial}
// Run: bun bench/baselines/bun_pubsub_server.ts [port]
// deno-lint-ignore no-explicit-any
declare const Bun: any;
declare const process: { argv: string[] };

const serials = new Map<string, number>();
const server = Bun.serve({
  port: Number(process.argv[2] ?? 0),
  hostname: "127.0.0.1",
  // deno-lint-ignore no-explicit-any
  async fetch(req: Request, srv: any) {
    const url = new URL(req.url);
    if (url.pathname === "/ws") {
      const channel = url.searchParams.get("channel") ?? "default";
      if (srv.upgrade(req, { data: { channel } })) return undefined;
      return new Response("upgrade failed", { status: 400 });
    }
    if (url.pathname === "/publish" && req.method === "POST") {
      const { channel, event, data } = await req.json();
      const serial = (serials.get(channel) ?? 0) + 1;
      serials.set(channel, serial);
      server.publish(channel, JSON.stringify([null, null, channel, event, { serial, data }]));
      return Response.json({ serial });
    }
    if (url.pathname === "/healthz") return Response.json({ status: "ok" });
    return new Response("not found", { status: 404 });
  },
  websocket: {
    perMessageDeflate: false,
    // deno-lint-ignore no-explicit-any
    open(ws: any) {
      ws.subscribe(ws.data.channel);
    },
    message() {},
  },
});
console.log(`bun pubsub baseline listening on http://127.0.0.1:${server.port}`);
