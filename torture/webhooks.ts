// Part (d): Pusher webhooks under faults (issue 34). Three cases, each bounded in time:
// - crash: with the receiver down (connection refused), client events on a presence channel
//   are sent and seen by another socket, then the server is SIGKILLed right after the last;
//   after the restart, with the receiver up, every client_event webhook arrives, plus
//   member_removed / channel_vacated for the members and channels that died (both protocols);
// - isolation: app A's receiver accepts and never answers; app B's webhooks still arrive, all
//   of them while A's requests hang (the figure: B's slowest, in ms);
// - churn: four anonymous sockets loop subscribe/unsubscribe against a receiver answering 500,
//   with a small outbox byte bound: the outbox bytes never exceed it and drops are counted.
import { RawSocket } from "../tests/helpers/raw_socket.ts";
import type { TestApp, TestServer } from "../tests/helpers/server.ts";
import { token } from "../tests/pubsub/helpers.ts";
import { RawPusher, serverLib } from "../tests/pusher/helpers.ts";
import { type Budget, crashLines, type PartResult, sleep, start } from "./common.ts";
import { WEBHOOK_EVENT_TYPES } from "../lib/config/apps.ts";

type Event = { name: string; channel: string; [k: string]: unknown };
/** Every webhook event type but cache_miss (no cache channels here). */
const ALL = WEBHOOK_EVENT_TYPES.filter((t) => t !== "cache_miss");

/** A loopback receiver on a fixed port that can be down (nothing listening) or up. */
class Receiver {
  readonly port: number;
  bodies = new Set<string>();
  #server?: Deno.HttpServer;

  constructor() {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (l.addr as Deno.NetAddr).port;
    l.close();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  up(status = 200): void {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: this.port, onListen() {} },
      async (req) => {
        this.bodies.add(await req.text());
        return new Response(null, { status });
      },
    );
  }

  async down(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  events(): Event[] {
    return [...this.bodies].flatMap((b) => JSON.parse(b).events as Event[]);
  }
}

async function waitUntil(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

async function metric(server: TestServer, re: RegExp): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const m = text.match(re);
  return m ? Number(m[1]) : NaN;
}

/** One crash round: returns failures. */
async function crashRound(round: number, counts: Record<string, number>): Promise<string[]> {
  const hook = new Receiver(); // down
  const apps: TestApp[] = [{
    id: "app-1",
    key: "key1",
    secret: "secret1",
    enable_client_messages: true,
    webhooks: [{ url: hook.url, event_types: ALL }],
  }];
  const failures: string[] = [];
  const first = await start({ apps });
  let second: TestServer | undefined;
  try {
    const lib = serverLib(first);
    const sender = await RawPusher.connect(first, "key1");
    const listener = await RawPusher.connect(first, "key1");
    const channel = `presence-r${round}`;
    for (const [sock, user] of [[sender, "alice"], [listener, "bob"]] as const) {
      const auth = lib.authorizeChannel(sock.socketId, channel, { user_id: user });
      sock.send("pusher:subscribe", {
        channel,
        auth: auth.auth,
        channel_data: JSON.stringify({ user_id: user }),
      });
      await sock.waitFor((m) => m.event === "pusher_internal:subscription_succeeded");
    }
    const phoenix = await RawSocket.connect(first.wsUrl("key1"));
    const tok = await token(first, apps[0], phoenix.socketId, [
      `channel:subscribe:presence-ph${round}`,
      `channel:presence:presence-ph${round}`,
    ], "carol");
    await phoenix.join(`pubsub:key1:presence-ph${round}`, {
      auth: tok,
      channel_data: { user_id: "carol" },
    });
    const N = 50;
    for (let i = 0; i < N; i++) {
      sender.send("client-n", { i }, channel);
      if (i % 10 === 9) await sleep(5);
    }
    const seen = await waitUntil(
      () => listener.messages.filter((m) => m.event === "client-n").length === N,
      10_000,
    );
    if (!seen) {
      failures.push(
        `round ${round}: the listener saw ${
          listener.messages.filter((m) => m.event === "client-n").length
        } of ${N} client events`,
      );
    }
    await first.kill(); // the last events were seen a moment ago
    counts.kills++;
    hook.up();
    second = await start({ apps, dataDir: first.dataDir });
    const done = () => {
      const e = hook.events();
      return new Set(e.filter((x) => x.name === "client_event").map((x) => x.data)).size >= N &&
        new Set(
            e.filter((x) => x.name === "member_removed").map((x) => `${x.channel}:${x.user_id}`),
          ).size >= 3 &&
        new Set(e.filter((x) => x.name === "channel_vacated").map((x) => x.channel)).size >= 2;
    };
    await waitUntil(done, 45_000);
    const e = hook.events();
    const client = new Set(e.filter((x) => x.name === "client_event").map((x) => x.data));
    counts.clientEventWebhooks += client.size;
    if (client.size !== N) {
      failures.push(`round ${round}: ${client.size} of ${N} client_event webhooks arrived`);
    }
    const removed = new Set(
      e.filter((x) => x.name === "member_removed").map((x) => `${x.channel}:${x.user_id}`),
    );
    const want = [`${channel}:alice`, `${channel}:bob`, `presence-ph${round}:carol`];
    for (const w of want) {
      if (!removed.has(w)) failures.push(`round ${round}: no member_removed for ${w}`);
    }
    const vacated = new Set(e.filter((x) => x.name === "channel_vacated").map((x) => x.channel));
    for (const c of [channel, `presence-ph${round}`]) {
      if (!vacated.has(c)) failures.push(`round ${round}: no channel_vacated for ${c}`);
    }
    counts.leavesReported += removed.size + vacated.size;
  } finally {
    await first.kill().catch(() => {});
    if (second) {
      await second.stop();
      failures.push(
        ...crashLines(second.output()).slice(0, 5).map((l) => `server output: ${l.slice(0, 300)}`),
      );
    }
    await hook.down();
  }
  return failures;
}

/** A hanging receiver for app A beside a healthy one for app B. */
async function isolation(counts: Record<string, number>): Promise<string[]> {
  const failures: string[] = [];
  const hanging: (() => void)[] = [];
  let aRequests = 0;
  const a = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    aRequests++;
    return new Promise<Response>((resolve) => hanging.push(() => resolve(new Response(null))));
  });
  const arrivals = new Map<string, number>();
  const b = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    for (const e of JSON.parse(await req.text()).events as Event[]) {
      if (!arrivals.has(e.channel)) arrivals.set(e.channel, Date.now());
    }
    return new Response(null);
  });
  const apps: TestApp[] = [
    {
      id: "app-a",
      key: "keya",
      secret: "secreta",
      webhooks: [{
        url: `http://127.0.0.1:${a.addr.port}/h`,
        event_types: ["channel_occupied", "channel_vacated"],
      }],
    },
    {
      id: "app-b",
      key: "keyb",
      secret: "secretb",
      webhooks: [{ url: `http://127.0.0.1:${b.addr.port}/h`, event_types: ["channel_occupied"] }],
    },
  ];
  const server = await start({ apps });
  try {
    const sa = await RawPusher.connect(server, "keya");
    for (let i = 0; i < 40; i++) sa.send("pusher:subscribe", { channel: `a-${i}` });
    await waitUntil(() => aRequests >= 4, 10_000);
    const sb = await RawPusher.connect(server, "keyb");
    const sent = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      sent.set(`b-${i}`, Date.now());
      sb.send("pusher:subscribe", { channel: `b-${i}` });
      await sleep(20);
    }
    const all = await waitUntil(() => arrivals.size === 30, 10_000);
    if (!all) {
      failures.push(`app B: ${arrivals.size} of 30 webhooks arrived while app A's receiver hung`);
    }
    if (hanging.length !== aRequests) {
      failures.push("app A's receiver answered: the case did not hang it");
    }
    let slowest = 0;
    for (const [ch, at] of arrivals) slowest = Math.max(slowest, at - sent.get(ch)!);
    counts.bSlowestMs = slowest;
    counts.aHangingRequests = aRequests;
    // Generous bound (a loaded CI machine): "within a second" is the target.
    if (slowest > 5000) {
      failures.push(`app B's slowest webhook took ${slowest} ms while app A's receiver hung`);
    }
    sa.close();
    sb.close();
  } finally {
    await server.stop();
    for (const release of hanging) release();
    await a.shutdown();
    await b.shutdown();
    failures.push(
      ...crashLines(server.output()).slice(0, 5).map((l) => `server output: ${l.slice(0, 300)}`),
    );
  }
  return failures;
}

/** Anonymous subscribe/unsubscribe churn against a failing receiver: the outbox stays bounded. */
async function churn(ms: number, counts: Record<string, number>): Promise<string[]> {
  const failures: string[] = [];
  const MAX_BYTES = 256 * 1024;
  const hook = new Receiver();
  hook.up(500);
  const apps: TestApp[] = [{
    id: "app-1",
    key: "key1",
    secret: "secret1",
    webhooks: [{ url: hook.url, event_types: ["channel_occupied", "channel_vacated"] }],
  }];
  const server = await start({
    apps,
    env: { SWITCHBOARD_WEBHOOK_OUTBOX_MAX_BYTES: String(MAX_BYTES) },
  });
  try {
    let going = true;
    let ops = 0;
    const loops = Array.from({ length: 4 }, async (_, k) => {
      const sock = await RawPusher.connect(server, "key1");
      for (let i = 0; going; i++) {
        const channel = `churn-${k}-${i % 50}-${"x".repeat(100)}`;
        sock.send("pusher:subscribe", { channel });
        sock.send("pusher:unsubscribe", { channel });
        ops += 2;
        if (sock.messages.length > 1000) sock.messages.length = 0;
        await sleep(2);
      }
      sock.close();
    });
    let maxBytes = 0;
    const fileAtStart = await metric(server, /switchboard_lmdb_size_bytes (\d+)/);
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      maxBytes = Math.max(
        maxBytes,
        await metric(server, /switchboard_webhook_outbox_bytes\{kind="pusher"\} (\d+)/),
      );
      await sleep(250);
    }
    going = false;
    await Promise.all(loops);
    const dropped = await metric(
      server,
      /switchboard_webhook_dropped_total\{kind="pusher"\} (\d+)/,
    );
    counts.churnOps = ops;
    counts.outboxMaxBytes = maxBytes;
    counts.dropped = dropped;
    const fileGrowth = await metric(server, /switchboard_lmdb_size_bytes (\d+)/) - fileAtStart;
    counts.dataFileGrowthKiB = Math.round(fileGrowth / 1024);
    counts.residentMiB = Math.round(
      await metric(server, /switchboard_process_resident_memory_bytes (\d+)/) / 2 ** 20,
    );
    // Generous: the bound is 256 KiB of bodies; LMDB keeps freed pages for reuse.
    if (fileGrowth > 64 * 2 ** 20) {
      failures.push(`the data file grew by ${fileGrowth} bytes under churn`);
    }
    if (!(maxBytes <= MAX_BYTES)) {
      failures.push(`outbox bytes reached ${maxBytes}, over the bound ${MAX_BYTES}`);
    }
    if (!(dropped > 0)) {
      failures.push("nothing was dropped: the churn never filled the outbox (vacuous)");
    }
  } finally {
    await server.stop();
    await hook.down();
    failures.push(
      ...crashLines(server.output()).slice(0, 5).map((l) => `server output: ${l.slice(0, 300)}`),
    );
  }
  return failures;
}

/** Runs the three cases within the budget (crash rounds get what the others leave). */
export async function webhooks(budget: Budget): Promise<PartResult> {
  const counts: Record<string, number> = { kills: 0, clientEventWebhooks: 0, leavesReported: 0 };
  const failures: string[] = [];
  const started = Date.now();
  failures.push(...await isolation(counts));
  failures.push(...await churn(Math.min(20_000, budget.ms / 4), counts));
  let round = 0;
  do {
    failures.push(...await crashRound(round++, counts));
  } while (Date.now() - started < budget.ms * 0.6 && failures.length === 0);
  return { name: "webhooks", counts, failures };
}
