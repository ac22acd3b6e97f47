// The stream layer's contract, once for every ordered product: under a write storm, a joiner
// arriving at any moment sees replay (after 0) + snapshot at N + live from N + 1 as exactly
// 1..total, in order, with nothing dropped or duplicated; a joiner without a position sees
// exactly N + 1..total live.
import assert from "node:assert/strict";
import { api, doc, makeThread } from "../chat_rest/helpers.ts";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestServer } from "../helpers/in_process.ts";

interface ProductCase {
  name: string;
  topic: string;
  /** Join params; `after` is the position to resume from, or undefined. */
  params(after?: number): Record<string, unknown>;
  /** The position of a join reply. */
  head(response: Record<string, unknown>): number;
  /** The position carried by a live or replayed event, or undefined for other frames. */
  position(event: string, payload: Record<string, unknown>): number | undefined;
  setup?(server: TestServer): Promise<void>;
  /** One acknowledged write. */
  write(server: TestServer, i: number): Promise<void>;
}

const post = async (server: TestServer, path: string, body: unknown) => {
  const res = await fetch(server.baseUrl + path, {
    method: "POST",
    headers: server.headers(),
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  await res.body?.cancel();
};

const CASES: ProductCase[] = [
  {
    name: "Durable Object",
    topic: "durable:key1:counter:contract",
    params: (after) => ({
      app_secret: "secret1",
      ...(after !== undefined ? { after_log_id: after } : {}),
    }),
    head: (r) => r.log_id as number,
    position: (e, p) => (e === "change" || e === "batch" ? p.log_id as number : undefined),
    write: (s) => post(s, "/api/v1/objects/app-1/counter/contract/increment", { slot: "n" }),
  },
  {
    name: "channel",
    topic: "pubsub:key1:contract",
    params: (after) => (after !== undefined ? { after_serial: after } : {}),
    head: (r) => r.serial as number,
    position: (e, p) => (e === "tick" ? p.serial as number : undefined),
    write: (s, i) =>
      post(s, "/api/apps/app-1/trigger", { channel: "contract", event: "tick", data: i }),
  },
  {
    name: "chat thread",
    topic: "chat:key1:contract",
    params: (after) => ({
      client_id: "viewer",
      ...(after !== undefined ? { after_log_id: after } : {}),
    }),
    head: (r) => r.log_id as number,
    position: (_e, p) => (typeof p.log_id === "number" ? p.log_id : undefined),
    setup: async (s) => void await makeThread(s, "contract"),
    write: async (s, i) => {
      const r = await api(
        s,
        "POST",
        "/api/chat/threads/contract/messages",
        doc("messages", { role: "user", content: `${i}` }, { id: `c${i}` }),
      );
      assert.equal(r.status, 201);
    },
  },
];

for (const product of CASES) {
  Deno.test(`stream contract (${product.name}): joiners at random moments of a write storm see exactly 1..N`, async () => {
    const server = await startInProcess();
    const sockets: RawSocket[] = [];
    try {
      await product.setup?.(server);
      const base = product.name === "chat thread" ? 1 : 0; // thread:created is log_id 1
      const writes = 240;
      let next = 0;
      const writers = Array.from({ length: 8 }, async () => {
        while (next < writes) await product.write(server, next++);
      });
      const joiners = Array.from({ length: 10 }, async (_, j) => {
        await new Promise((r) => setTimeout(r, Math.random() * 400));
        const sock = await RawSocket.connect(server.wsUrl("key1"));
        sockets.push(sock);
        const resume = j % 2 === 0 ? 0 : undefined;
        const reply = await sock.join(product.topic, product.params(resume));
        assert.equal(reply.status, "ok", JSON.stringify(reply.response));
        return { sock, from: resume ?? product.head(reply.response) };
      });
      const joined = await Promise.all(joiners);
      await Promise.all(writers);
      const total = base + writes;
      for (const { sock, from } of joined) {
        const seen = () =>
          sock.frames.map((f) => product.position(f[3], f[4])).filter((p): p is number =>
            p !== undefined
          );
        await sock.waitFor(() => seen().length >= total - from, 10_000);
        assert.deepEqual(seen(), Array.from({ length: total - from }, (_, i) => from + i + 1));
      }
    } finally {
      for (const s of sockets) await s.close();
      await server.stop();
    }
  });
}
