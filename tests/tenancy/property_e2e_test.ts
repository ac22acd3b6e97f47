// Property (fast-check), end to end against one server (the binary with SWITCHBOARD_BIN): for
// arbitrary tuples of app and names (object type and key, thread id, channel name, user id;
// arbitrary Unicode with `/`, `%2F`, `%25`, `\n`, `:` and NUL mixed in), distinct tuples never
// share data: each reads back exactly what was written under it, and ending one user's
// connections leaves every other tuple's socket open. Apps `p`, `p-q` and `p_q` share a prefix.
// Bounded: at most RUNS runs and TIME_MS of runs. Seeded; the seed is printed on a failure.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import fc from "fast-check";
import { startInProcess, type TestApp, type TestServer } from "../helpers/in_process.ts";
import { call } from "../pubsub/helpers.ts";
import { RawPusher, serverLib } from "../pusher/helpers.ts";

const SEED_ENV = Deno.env.get("PROPERTY_SEED") ?? "20261128";
const SEED = SEED_ENV === "random" ? Date.now() % 2 ** 31 : Number(SEED_ENV);
const RUNS = Number(Deno.env.get("PROPERTY_RUNS") ?? 15);
const TIME_MS = 15_000;

const APPS: TestApp[] = [
  { id: "p", key: "p-key", secret: "p-secret-0123456789" },
  { id: "p-q", key: "p_key", secret: "p-q-secret-0123456789" },
  { id: "p_q", key: "P-KEY", secret: "p_q-secret-0123456789" },
];

/** Text that a plain join or a half-done escape would confuse, mixed with any graphemes. */
const name = fc.array(
  fc.oneof(
    fc.constantFrom("/", "%", "%2F", "%25", "\n", ":", "\u0000", "p", "q", "-", "_"),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 3 }),
  ),
  { minLength: 1, maxLength: 5 },
).map((parts) => parts.join(""));
/** Object types refuse `/` and `:`. */
const objectType = name.map((s) => s.replaceAll("/", "").replaceAll(":", "")).filter((s) =>
  s !== ""
);
/** Channel names are of `A-Z a-z 0-9 _ - = @ , . ; :`. */
const channel = fc.stringMatching(/^[A-Za-z0-9_\-=@,.;:]{1,20}$/)
  .filter((c) => !/^(private|presence)-/.test(c));
const app = fc.integer({ min: 0, max: APPS.length - 1 });

/** Distinct tuples of `arb` (by their JSON), 2 to `max` of them. */
const tuples = <T>(arb: fc.Arbitrary<T>, max: number) =>
  fc.uniqueArray(arb, { minLength: 2, maxLength: max, selector: (t) => JSON.stringify(t) });

const objects = tuples(fc.tuple(app, objectType, name), 4);
const threads = tuples(fc.tuple(app, name), 3);
const channels = tuples(fc.tuple(app, channel), 3);
const users = fc.tuple(fc.tuple(app, name), fc.tuple(app, name));

let run = 0;

async function checkObjects(server: TestServer, list: [number, string, string][]) {
  const path = ([a, type, key]: [number, string, string]) =>
    `/api/v1/objects/${APPS[a].id}/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;
  const marks = list.map((t) => `run ${run} ${JSON.stringify(t)}`);
  for (const [i, t] of list.entries()) {
    const put = await call(server, "PUT", `${path(t)}/s`, { value: marks[i] }, APPS[t[0]]);
    assert.equal(put.status, 200, `${JSON.stringify(t)}: ${JSON.stringify(put.body)}`);
  }
  for (const [i, t] of list.entries()) {
    const got = await call(server, "GET", `${path(t)}/s`, undefined, APPS[t[0]]);
    assert.deepEqual(got.body, { value: marks[i] }, JSON.stringify(t));
  }
}

async function checkThreads(server: TestServer, list: [number, string][]) {
  const chat = async (a: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(server.baseUrl + path, {
      method,
      headers: {
        "X-App-Key": APPS[a].key,
        "X-App-Secret": APPS[a].secret,
        ...(body ? { "Content-Type": "application/vnd.api+json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const marks = list.map((t) => `run ${run} ${JSON.stringify(t)}`);
  for (const [i, [a, id]] of list.entries()) {
    const at = `/api/chat/threads/${encodeURIComponent(id)}`;
    // A thread of an earlier run with the same id goes first (only in its own app).
    const gone = await chat(a, "DELETE", at);
    assert.ok(gone.status === 204 || gone.status === 404, `${gone.status}`);
    const made = await chat(a, "POST", "/api/chat/threads", {
      data: { type: "threads", id, attributes: { title: marks[i] } },
    });
    assert.equal(made.status, 201, `${JSON.stringify(list[i])}: ${JSON.stringify(made.body)}`);
  }
  for (const [i, [a, id]] of list.entries()) {
    const got = await chat(a, "GET", `/api/chat/threads/${encodeURIComponent(id)}`);
    assert.equal(got.status, 200, JSON.stringify(list[i]));
    assert.equal(got.body.data.attributes.title, marks[i], JSON.stringify(list[i]));
  }
}

async function checkChannels(server: TestServer, list: [number, string][]) {
  const sent: number[] = [];
  for (const [a, ch] of list) {
    const t = await call(server, "POST", `/api/apps/${APPS[a].id}/trigger`, {
      channel: ch,
      event: "ev",
      data: JSON.stringify([run, a, ch]),
    }, APPS[a]);
    assert.equal(t.status, 200, JSON.stringify(t.body));
    sent.push(t.body.serial);
  }
  for (const [i, [a, ch]] of list.entries()) {
    const h = await call(
      server,
      "GET",
      `/api/apps/${APPS[a].id}/channels/${ch}/history?after=${sent[i] - 1}&limit=10`,
      undefined,
      APPS[a],
    );
    assert.equal(h.status, 200);
    // Nothing was published on this tuple after its own event: no other tuple's.
    assert.deepEqual(
      h.body.items.map((e: { serial: number; data: unknown }) => [e.serial, e.data]),
      [[sent[i], JSON.stringify([run, a, ch])]],
      JSON.stringify(list[i]),
    );
  }
}

/** Ends `user`'s connections in app `a` (the user id percent-encoded in the signed path). */
async function terminate(server: TestServer, a: number, user: string): Promise<number> {
  const path = `/apps/${APPS[a].id}/users/${encodeURIComponent(user)}/terminate_connections`;
  const body = "{}";
  const params: Record<string, string> = {
    auth_key: APPS[a].key,
    auth_timestamp: String(Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
    body_md5: createHash("md5").update(body).digest("hex"),
  };
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&");
  const sig = createHmac("sha256", APPS[a].secret).update(["POST", path, query].join("\n"))
    .digest("hex");
  const res = await fetch(`${server.baseUrl}${path}?${query}&auth_signature=${sig}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(30_000),
  });
  await res.body?.cancel();
  return res.status;
}

async function checkUsers(server: TestServer, [one, two]: [[number, string], [number, string]]) {
  const socks: RawPusher[] = [];
  try {
    for (const [a, user] of [one, two]) {
      const raw = await RawPusher.connect(server, APPS[a].key);
      socks.push(raw);
      const auth = serverLib(server, APPS[a]).authenticateUser(raw.socketId, { id: user });
      raw.send("pusher:signin", { auth: auth.auth, user_data: auth.user_data });
      await raw.waitFor((m) => m.event === "pusher:signin_success", 10_000);
    }
    assert.equal(await terminate(server, one[0], one[1]), 200);
    assert.equal((await socks[0].closed(10_000)).code, 4009);
    if (JSON.stringify(one) === JSON.stringify(two)) {
      assert.equal((await socks[1].closed(10_000)).code, 4009);
      return;
    }
    socks[1].messages = [];
    socks[1].send("pusher:ping", {});
    await socks[1].waitFor((m) => m.event === "pusher:pong", 10_000);
    assert.equal(socks[1].closeEvent, undefined, JSON.stringify([one, two]));
  } finally {
    for (const s of socks) s.close();
  }
}

Deno.test("property: distinct (app, names) tuples never share data, end to end", async () => {
  const server = await startInProcess({ apps: APPS });
  try {
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(objects, threads, channels, users, async (o, t, c, u) => {
        run++;
        await checkObjects(server, o);
        await checkThreads(server, t);
        await checkChannels(server, c);
        await checkUsers(server, u);
      }),
      {
        seed: SEED,
        numRuns: RUNS,
        // Bounded in time on a loaded machine: runs past TIME_MS are not started.
        interruptAfterTimeLimit: TIME_MS,
        markInterruptAsFailure: false,
        endOnFailure: true,
      },
    );
    // Not vacuous: some runs happened (the first ones are never cut short).
    assert.ok(run >= Math.min(RUNS, 3), `only ${run} runs in ${Date.now() - started} ms`);
  } finally {
    await server.stop();
  }
});
