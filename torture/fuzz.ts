// Part (a): a fuzzer of WebSocket frames (JSON and MessagePack) on every product's topics and
// of every HTTP route, with fast-check arbitraries. A failure: a 5xx, a crash line in the
// server's output, a socket that stops answering heartbeats, or a topic/route that no longer
// works for a clean client afterwards (a poisoned stream).
import fc from "fast-check";
import { Packr } from "msgpackr";
import { RawSocket } from "../tests/helpers/raw_socket.ts";
import type { TestServer } from "../tests/helpers/server.ts";
import { type Budget, crashLines, type PartResult, start } from "./common.ts";

/** Packs anything msgpack can carry: 64-bit integers, NaN, dates, binary included. */
const packr = new Packr({ useRecords: false, mapsAsObjects: true });

const TOPICS = [
  "durable:key1:fz:k",
  "pubsub:key1:fz",
  "pubsub:key1:presence-fz",
  "pubsub:key1:private-fz",
  "chat:key1:fz",
  "chat:key1:fz·日本",
  "spaces:key1:fz",
];
const EVENTS = [
  "phx_join",
  "phx_leave",
  "heartbeat",
  "send",
  "edit",
  "regenerate",
  "cancel",
  "token",
  "run:start",
  "run:end",
  "run:suspend",
  "tool:approve",
  "load_older",
  "message",
  "cursor",
  "client-ev",
];
const KEYS = [
  "auth",
  "after_log_id",
  "after_serial",
  "epoch",
  "client_id",
  "channel_data",
  "app_secret",
  "agent_secret",
  "agent_id",
  "content",
  "messageId",
  "runId",
  "parentId",
  "text",
  "limit",
  "before",
  "data",
  "toolCallId",
  "reason",
];

/** Values a hostile or careless client might send, beyond plain JSON. */
const wild = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, "x".repeat(3000), "secret1", 2 ** 53 + 1),
  fc.date({ noInvalidDate: true }),
  fc.uint8Array({ maxLength: 16 }),
);

const frameArb = fc.record({
  topic: fc.oneof(
    fc.constantFrom(...TOPICS),
    fc.string({ maxLength: 30 }),
    fc.constantFrom("phoenix"),
  ),
  event: fc.oneof(fc.constantFrom(...EVENTS), fc.string({ maxLength: 12 })),
  payload: fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 8 })), wild, {
    maxKeys: 5,
  }),
  joinRef: fc.oneof(fc.constant(null), fc.constantFrom("1", "2"), fc.string({ maxLength: 4 })),
  junk: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, {
    weight: 1,
    arbitrary: fc.uint8Array({ maxLength: 64 }),
  }),
});

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const PATHS = [
  "/api/v1/objects/app-1/{a}/{b}",
  "/api/v1/objects/app-1/{a}/{b}/{c}",
  "/api/v1/objects/app-1/{a}/{b}/increment",
  "/api/v1/objects/app-1/{a}/{b}/append",
  "/api/v1/objects/app-1/{a}/{b}/transaction",
  "/api/v1/objects/app-1/{a}/{b}/log",
  "/api/apps/app-1/trigger",
  "/api/apps/app-1/push",
  "/api/apps/app-1/channels",
  "/api/apps/app-1/channels/{a}",
  "/api/apps/app-1/channels/{a}/history",
  "/api/apps/app-1/channels/{a}/users",
  "/api/auth",
  "/api/chat/threads",
  "/api/chat/threads/{a}",
  "/api/chat/threads/{a}/messages",
  "/api/chat/threads/{a}/messages/{b}",
  "/api/chat/threads/{a}/participants",
  "/api/chat/threads/{a}/messages/{b}/reactions",
  "/api/chat/bots",
  "/api/chat/bots/{a}",
  "/api/chat/threads/{a}/resolve",
  "/api/chat/open_api",
  "/healthz",
  "/{a}",
];
const segment = fc.oneof(
  fc.constantFrom("fz", "café", "%2F", "..", "%00", "a%3Ab", "x".repeat(3000), "😀"),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 }).map(encodeURIComponent),
);
const httpArb = fc.record({
  method: fc.constantFrom(...METHODS),
  path: fc.constantFrom(...PATHS),
  a: segment,
  b: segment,
  c: segment,
  body: fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.record({
      channel: fc.constantFrom("fz", "ephemeral-fz"),
      event: fc.string({ maxLength: 8 }),
      data: fc.jsonValue({ maxDepth: 2 }),
    }).map((v) => JSON.stringify(v)),
    fc.record({
      data: fc.record({
        type: fc.constantFrom("threads", "messages"),
        id: segment,
        attributes: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
      }),
    }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 64 }),
  ),
  creds: fc.constantFrom("good", "bad", "none"),
  type: fc.constantFrom("application/json", "application/vnd.api+json", "text/plain"),
});

/** Runs the fuzzer for the budget. */
export async function fuzz(budget: Budget): Promise<PartResult> {
  const counts = { frames: 0, httpRequests: 0, heartbeatChecks: 0, cleanJoins: 0 };
  const failures: string[] = [];
  const server = await start();
  const deadline = Date.now() + budget.ms;
  try {
    for (const format of ["json", "msgpack"] as const) {
      const url = server.wsUrl("key1", format === "msgpack" ? "&format=msgpack" : "");
      let sock = await RawSocket.connect(url);
      await fc.assert(
        fc.asyncProperty(fc.array(frameArb, { minLength: 1, maxLength: 20 }), async (frames) => {
          if (Date.now() > deadline) return;
          for (const f of frames) {
            const frame = [f.joinRef, String(++counts.frames), f.topic, f.event, f.payload];
            let data: string | Uint8Array;
            if (f.junk) data = f.junk;
            else if (format === "msgpack") data = packr.pack(frame);
            else {
              try {
                data = JSON.stringify(frame);
              } catch {
                data = JSON.stringify(frame, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
              }
            }
            sock.sendRaw(
              format === "json" && typeof data !== "string" ? new TextDecoder().decode(data) : data,
            );
          }
          counts.heartbeatChecks++;
          try {
            const ref = sock.send(null, "phoenix", "heartbeat", {});
            await sock.waitFor((x) => x[1] === ref && x[3] === "phx_reply", 5000);
          } catch (err) {
            if (!sock.closeEvent) throw new Error(`${format} socket stopped answering: ${err}`);
            // A close is a legitimate answer to some inputs (e.g. a frame over the runtime's
            // limit); it must carry a code, and a new socket must work.
            if (sock.closeEvent.code === 1006) {
              throw new Error(`${format} socket dropped without a close frame`);
            }
            sock = await RawSocket.connect(url);
          }
          sock.frames.length = 0;
        }),
        {
          seed: budget.seed,
          numRuns: 100_000,
          interruptAfterTimeLimit: Math.max(1000, (deadline - Date.now()) / 3),
          markInterruptAsFailure: false,
        },
      ).catch((err) => failures.push(String(err).slice(0, 2000)));
      await sock.close();
    }
    await fc.assert(
      fc.asyncProperty(httpArb, async (h) => {
        counts.httpRequests++;
        const path = h.path.replace("{a}", h.a).replace("{b}", h.b).replace("{c}", h.c);
        const headers: Record<string, string> = { "content-type": h.type };
        if (h.creds !== "none") {
          headers["x-app-key"] = "key1";
          headers["x-app-secret"] = h.creds === "good" ? "secret1" : "nope";
        }
        const res = await fetch(server.baseUrl + path, {
          method: h.method,
          headers,
          body: h.method === "GET" ? undefined : h.body,
        });
        await res.body?.cancel();
        if (res.status >= 500) {
          throw new Error(`${h.method} ${path.slice(0, 200)} -> ${res.status}`);
        }
      }),
      {
        seed: budget.seed,
        numRuns: 1_000_000,
        interruptAfterTimeLimit: Math.max(1000, deadline - Date.now()),
        markInterruptAsFailure: false,
      },
    ).catch((err) => failures.push(String(err).slice(0, 2000)));
    await checkNotPoisoned(server, counts, failures);
  } finally {
    await server.stop();
    failures.push(
      ...crashLines(server.output()).slice(0, 20).map((l) => `server output: ${l.slice(0, 300)}`),
    );
  }
  return { name: "fuzz", counts, failures };
}

/** Clean clients of both formats can still join every fuzzed topic and read every resource. */
async function checkNotPoisoned(
  server: TestServer,
  counts: Record<string, number>,
  failures: string[],
) {
  for (const extra of ["", "&format=msgpack"]) {
    const sock = await RawSocket.connect(server.wsUrl("key1", extra));
    try {
      for (const topic of TOPICS) {
        const params: Record<string, unknown> = topic.startsWith("durable")
          ? { app_secret: "secret1", after_log_id: 0 }
          : topic.startsWith("chat")
          ? { client_id: "clean", after_log_id: 0 }
          : topic.includes("private") || topic.includes("presence")
          ? {}
          : { after_serial: 0 };
        const r = await sock.join(topic, params).catch((err) => ({
          status: "timeout",
          response: { reason: String(err) },
        }));
        counts.cleanJoins++;
        const expectedRefusal = topic.includes("private") || topic.includes("presence");
        if (r.status !== "ok" && !(expectedRefusal && r.status === "error")) {
          failures.push(
            `clean join of ${topic}${extra} failed: ${JSON.stringify(r.response).slice(0, 300)}`,
          );
        }
      }
    } finally {
      await sock.close();
    }
  }
  const h = { "x-app-key": "key1", "x-app-secret": "secret1" };
  for (
    const path of [
      "/api/v1/objects/app-1/fz/k",
      "/api/v1/objects/app-1/fz/k/log",
      "/api/chat/threads/fz/messages",
      "/api/apps/app-1/channels/fz/history",
      "/healthz",
    ]
  ) {
    const res = await fetch(server.baseUrl + path, { headers: h });
    await res.body?.cancel();
    if (res.status >= 500) failures.push(`clean read ${path} -> ${res.status}`);
  }
}
