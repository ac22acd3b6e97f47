// Part (c): churn. Subscribers of an object, a channel and a thread leave and rejoin with
// `after_log_id` / `after_serial` (and their epoch) during a write storm; each must end up
// having seen exactly 1..N, in order, once.
import { RawSocket } from "../tests/helpers/raw_socket.ts";
import type { TestServer } from "../tests/helpers/server.ts";
import { type Budget, crashLines, type PartResult, rng, sleep, start } from "./common.ts";

interface Target {
  topic: string;
  params: Record<string, unknown>;
  after: "after_log_id" | "after_serial";
  head: (r: Record<string, unknown>) => number;
  position: (event: string, p: Record<string, unknown>) => number | undefined;
  write: (server: TestServer) => Promise<Response>;
}

const TARGETS: Target[] = [
  {
    topic: "durable:key1:churn:k",
    params: { app_secret: "secret1" },
    after: "after_log_id",
    head: (r) => r.log_id as number,
    position: (e, p) => (e === "change" ? p.log_id as number : undefined),
    write: (s) =>
      fetch(`${s.baseUrl}/api/v1/objects/app-1/churn/k/increment`, {
        method: "POST",
        headers: s.headers(),
        body: '{"slot":"n"}',
      }),
  },
  {
    topic: "pubsub:key1:churn",
    params: {},
    after: "after_serial",
    head: (r) => r.serial as number,
    position: (e, p) => (e === "tick" ? p.serial as number : undefined),
    write: (s) =>
      fetch(`${s.baseUrl}/api/apps/app-1/trigger`, {
        method: "POST",
        headers: s.headers(),
        body: '{"channel":"churn","event":"tick","data":0}',
      }),
  },
  {
    topic: "chat:key1:churn",
    params: { client_id: "churner" },
    after: "after_log_id",
    head: (r) => r.log_id as number,
    position: (e, p) => (e === "message:created" ? p.log_id as number : undefined),
    write: (s) =>
      fetch(`${s.baseUrl}/api/chat/threads/churn/messages`, {
        method: "POST",
        headers: { ...s.headers(), "content-type": "application/vnd.api+json" },
        body: JSON.stringify({
          data: {
            type: "messages",
            id: crypto.randomUUID(),
            attributes: { role: "user", content: "x" },
          },
        }),
      }),
  },
];

/** One subscriber that keeps leaving and rejoining until `stop()`; returns what it saw. */
async function subscriber(
  server: TestServer,
  t: Target,
  random: () => number,
  until: () => boolean,
) {
  const seen: number[] = [];
  let position: number | undefined;
  let epoch: string | undefined;
  let rejoins = 0;
  while (!until()) {
    const sock = await RawSocket.connect(
      server.wsUrl("key1", random() < 0.5 ? "&format=msgpack" : ""),
    );
    try {
      const params = {
        ...t.params,
        ...(position !== undefined ? { [t.after]: position, epoch } : {}),
      };
      const r = await sock.join(t.topic, params);
      if (r.status !== "ok") throw new Error(`join refused: ${JSON.stringify(r.response)}`);
      epoch = r.response.epoch as string;
      const start = sock.frames.findIndex((f) => f[3] === "phx_reply" && f[2] === t.topic);
      const replayed = sock.frames.slice(0, start).map((f) => t.position(f[3], f[4])).filter((p) =>
        p !== undefined
      );
      seen.push(...replayed as number[]);
      if (position === undefined) {
        seen.push(
          ...Array.from({ length: t.head(r.response) }, (_, i) => i + 1).filter((p) =>
            !seen.includes(p)
          ),
        );
      }
      await sleep(20 + random() * 200);
      const live = sock.frames.slice(start + 1).map((f) => t.position(f[3], f[4])).filter((p) =>
        p !== undefined
      );
      seen.push(...live as number[]);
      position = seen.length ? seen[seen.length - 1] : t.head(r.response);
      rejoins++;
    } finally {
      await sock.close();
    }
  }
  return { seen, rejoins, position };
}

/** Runs the churn for the budget. */
export async function churn(budget: Budget): Promise<PartResult> {
  const random = rng(budget.seed);
  const counts = { writes: 0, rejoins: 0, positionsChecked: 0 };
  const failures: string[] = [];
  const server = await start();
  try {
    await fetch(`${server.baseUrl}/api/chat/threads`, {
      method: "POST",
      headers: { ...server.headers(), "content-type": "application/vnd.api+json" },
      body: JSON.stringify({ data: { type: "threads", id: "churn", attributes: {} } }),
    }).then((r) => r.body?.cancel());
    const deadline = Date.now() + budget.ms;
    let writing = true;
    const heads = TARGETS.map((t) => (t.topic.startsWith("chat") ? 1 : 0));
    const writers = TARGETS.map(async (t, i) => {
      while (writing) {
        const r = await t.write(server);
        await r.body?.cancel();
        if (r.status >= 300) throw new Error(`${t.topic} write answered ${r.status}`);
        heads[i]++;
        counts.writes++;
      }
    });
    const subs = TARGETS.flatMap((t) =>
      Array.from({ length: 3 }, () => subscriber(server, t, random, () => Date.now() > deadline))
    );
    const results = await Promise.all(subs);
    writing = false;
    await Promise.all(writers);
    // Each subscriber catches up once more and must have seen exactly 1..head.
    for (const [k, res] of results.entries()) {
      const t = TARGETS[Math.floor(k / 3)];
      const head = heads[Math.floor(k / 3)];
      const sock = await RawSocket.connect(server.wsUrl("key1"));
      try {
        await sock.join(t.topic, { ...t.params, [t.after]: res.position ?? 0 });
        const rest = sock.frames.map((f) => t.position(f[3], f[4])).filter((p) =>
          p !== undefined
        ) as number[];
        const all = [...res.seen, ...rest];
        counts.rejoins += res.rejoins;
        counts.positionsChecked += all.length;
        const expected = Array.from({ length: head }, (_, i) => i + 1);
        if (JSON.stringify(all) !== JSON.stringify(expected)) {
          failures.push(
            `${t.topic}: saw ${all.length} positions, expected 1..${head} exactly (first difference at ${
              all.findIndex((p, i) => p !== i + 1)
            })`,
          );
        }
      } finally {
        await sock.close();
      }
    }
    if (counts.writes === 0 || counts.rejoins === 0) {
      failures.push("no writes or no rejoins: the check would be vacuous");
    }
  } finally {
    await server.stop();
    failures.push(
      ...crashLines(server.output()).slice(0, 20).map((l) => `server output: ${l.slice(0, 300)}`),
    );
  }
  return { name: "churn", counts, failures };
}
