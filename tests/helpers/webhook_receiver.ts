// A loopback webhook receiver for the bot webhook tests.

/** One received delivery. */
export interface Received {
  headers: Headers;
  body: string;
}

/** A loopback webhook receiver; `statuses` are answered in order, then 200. */
export function receiver(statuses: number[] = []) {
  const got: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    got.push({ headers: req.headers, body: await req.text() });
    for (const w of waiters.splice(0)) w();
    return new Response(null, { status: statuses.shift() ?? 200 });
  });
  const url = `http://127.0.0.1:${server.addr.port}/hook`;
  /** Waits until `n` deliveries arrived (by default up to 30 s: a bound for loaded machines). */
  async function waitFor(n: number, timeoutMs = 30_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (got.length < n) {
      if (Date.now() > deadline) throw new Error(`expected ${n} deliveries, got ${got.length}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return got;
  }
  return { url, got, waitFor, close: () => server.shutdown() };
}
