// Baseline: the HTTP floor of a durable write. A bare Bun server that reads each request's body
// and answers a small JSON reply, storing nothing: what any server answering one HTTP/1.1
// request per write pays on this machine, with the same generator as Switchboard's writes.
//   any method, any path   -> {"log_id": n, "value": n}
// Run: bun bench/baselines/http_floor_server.ts [port]
// deno-lint-ignore no-explicit-any
declare const Bun: any;
declare const process: { argv: string[] };

let n = 0;
const server = Bun.serve({
  port: Number(process.argv[2] ?? 0),
  hostname: "127.0.0.1",
  async fetch(req: Request) {
    await req.text();
    n++;
    return Response.json({ log_id: n, value: n });
  },
});
console.log(`http floor baseline listening on http://127.0.0.1:${server.port}`);
