// Tenants that cannot reach each other (end to end, against the server or the binary with
// SWITCHBOARD_BIN): apps whose ids share a prefix (`acme`, `acme-eu`, `acme_eu`; `n`, `n-l`)
// and names holding `/`, `%2F`, `%25`, `\n`, `:` and NUL never reach the other app's objects,
// console listing, chat threads or signed-in users, and the path the Pusher libraries build
// (`/apps/{id}/events`) answers for every id of the grammar. The start-up refusals of ids outside
// the grammar are in startup_test.ts.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess, type TestApp, type TestServer } from "../helpers/in_process.ts";
import { call } from "../pubsub/helpers.ts";
import { RawPusher, serverLib } from "../pusher/helpers.ts";
import { call as consoleCall, login } from "../console/helpers.ts";

const ACME: TestApp = { id: "acme", key: "acme-key", secret: "acme-secret-0123456789" };
const ACME_EU: TestApp = { id: "acme-eu", key: "acme_eu", secret: "acme-eu-secret-0123456789" };
const ACME_US: TestApp = { id: "acme_us", key: "ACME-US", secret: "acme-us-secret-0123456789" };
const N: TestApp = { id: "n", key: "n-key", secret: "n-secret-0123456789" };
const N_L: TestApp = { id: "n-l", key: "n_l", secret: "n-l-secret-0123456789" };
const APPS = [ACME, ACME_EU, ACME_US, N, N_L];

/** Object types and keys built to collide under a plain `/` or `\n` join. */
const TYPES = ["t", "eu", "t%2F", "t%25", "t\nk"];
const KEYS = ["k", "t/k", "eu/t/k", "t%2Fk", "t%25k", "t\nk", "t:k", "k\u0000x", "/", "%"];

/** `/api/v1/objects/{app}/{type}/{key}`, each segment percent-encoded. */
const objectPath = (app: TestApp, type: string, key: string) =>
  `/api/v1/objects/${app.id}/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;

/** The value each app writes to each of its objects: names the app and the object. */
const mark = (app: TestApp, type: string, key: string) => `${app.id}|${type}|${key}`;

/**
 * `POST /apps/{id}/users/{user}/terminate_connections` signed with the app's secret, the user id
 * percent-encoded in the path (the `pusher` library puts it in unencoded, so a user id with `/`
 * or a newline cannot be sent with it).
 */
async function terminate(server: TestServer, app: TestApp, user: string): Promise<number> {
  const path = `/apps/${app.id}/users/${encodeURIComponent(user)}/terminate_connections`;
  const body = "{}";
  const params: Record<string, string> = {
    auth_key: app.key,
    auth_timestamp: String(Math.floor(Date.now() / 1000)),
    auth_version: "1.0",
    body_md5: createHash("md5").update(body).digest("hex"),
  };
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join("&");
  const sig = createHmac("sha256", app.secret).update(["POST", path, query].join("\n"))
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

async function withApps(fn: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startInProcess({
    apps: APPS,
    args: ["--console-secret", "tenancy-admin-0123456789"],
  });
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
}

Deno.test("objects: apps with prefix ids and slash, escape and newline names never share an object", async () => {
  await withApps(async (server) => {
    const tenants = [ACME, ACME_EU, ACME_US];
    for (const app of tenants) {
      for (const type of TYPES) {
        for (const key of KEYS) {
          const put = await call(server, "PUT", `${objectPath(app, type, key)}/s`, {
            value: mark(app, type, key),
          }, app);
          assert.equal(
            put.status,
            200,
            `${app.id} ${JSON.stringify([type, key])}: ${JSON.stringify(put.body)}`,
          );
        }
      }
    }
    // The attack: acme's type `eu`, key `t/k` against acme-eu's type `t`, key `k`.
    const inc = await call(server, "POST", `${objectPath(ACME, "eu", "t/k")}/increment`, {
      slot: "n",
    }, ACME);
    assert.equal(inc.status, 200, JSON.stringify(inc.body));
    assert.equal(inc.body.value, 1);
    const purge = await call(server, "DELETE", objectPath(ACME_EU, "t", "k"), undefined, ACME_EU);
    assert.equal(purge.status, 204);

    for (const app of tenants) {
      for (const type of TYPES) {
        for (const key of KEYS) {
          const got = await call(server, "GET", objectPath(app, type, key), undefined, app);
          assert.equal(got.status, 200);
          const purged = app === ACME_EU && type === "t" && key === "k";
          const incremented = app === ACME && type === "eu" && key === "t/k";
          const expected = purged
            ? {}
            : incremented
            ? { s: mark(app, type, key), n: 1 }
            : { s: mark(app, type, key) };
          assert.deepEqual(got.body.state, expected, `${app.id} ${JSON.stringify([type, key])}`);
        }
      }
    }
    // A type holding `/` or `:` is refused, and nothing is written.
    for (const type of ["eu/t", "eu:t"]) {
      const bad = await call(server, "PUT", `${objectPath(ACME, type, "k")}/s`, { value: 1 }, ACME);
      assert.equal(bad.status, 422);
      assert.deepEqual(bad.body, { error: 'object type must not contain "/" or ":"' });
    }
    // One app's credentials do not open another app's objects, whatever the path says.
    const cross = await call(server, "GET", objectPath(ACME_EU, "t", "k/x"), undefined, ACME);
    assert.notEqual(cross.status, 200);

    // The console lists each app's own objects, every one of them, and no other app's.
    const cookie = await login(server, ACME.secret);
    const listed = await consoleCall(server, "/console/api/apps/acme/objects", { cookie });
    assert.equal(listed.status, 200);
    const objects = (listed.body.objects as { type: string; key: string }[])
      .map((o) => JSON.stringify([o.type, o.key])).sort();
    const written = TYPES.flatMap((t) => KEYS.map((k) => JSON.stringify([t, k]))).sort();
    assert.deepEqual(objects, written);
    const prefixed = await consoleCall(server, "/console/api/apps/acme/objects?type=t", { cookie });
    assert.deepEqual(
      (prefixed.body.objects as { type: string }[]).map((o) => o.type).sort(),
      TYPES.filter((t) => t.startsWith("t")).flatMap((t) => KEYS.map(() => t)).sort(),
    );
    const other = await consoleCall(server, "/console/api/apps/acme-eu/objects", { cookie });
    assert.equal(other.status, 404);
  });
});

Deno.test("chat: threads named to collide stay in their app (REST, replay, post, delete)", async () => {
  await withApps(async (server) => {
    const THREADS = ["t1", "eu/t1", "t1/x", "t1%2Fx", "t1\nx", "t1:x"];
    const chat = (app: TestApp, method: string, path: string, body?: unknown) =>
      fetch(server.baseUrl + path, {
        method,
        headers: {
          "X-App-Key": app.key,
          "X-App-Secret": app.secret,
          ...(body ? { "Content-Type": "application/vnd.api+json" } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      }).then(async (r) => ({ status: r.status, body: r.status === 204 ? null : await r.json() }));
    const thread = (id: string) => `/api/chat/threads/${encodeURIComponent(id)}`;
    for (const app of [ACME, ACME_EU]) {
      for (const id of THREADS) {
        const made = await chat(app, "POST", "/api/chat/threads", {
          data: { type: "threads", id, attributes: { title: mark(app, "thread", id) } },
        });
        assert.equal(
          made.status,
          201,
          `${app.id} ${JSON.stringify(id)}: ${JSON.stringify(made.body)}`,
        );
        const posted = await chat(app, "POST", `${thread(id)}/messages`, {
          data: {
            type: "messages",
            id: `m-${THREADS.indexOf(id)}`,
            attributes: { role: "user", content: mark(app, "message", id) },
          },
        });
        assert.equal(posted.status, 201, JSON.stringify(posted.body));
      }
    }
    // acme deletes its `t1`: acme-eu's `t1` (and acme's other threads) keep their messages.
    assert.equal((await chat(ACME, "DELETE", thread("t1"))).status, 204);
    for (const app of [ACME, ACME_EU]) {
      for (const id of THREADS) {
        const got = await chat(app, "GET", `${thread(id)}/messages`);
        if (app === ACME && id === "t1") {
          assert.equal(got.status, 404);
          continue;
        }
        assert.equal(got.status, 200, `${app.id} ${JSON.stringify(id)}`);
        const contents = got.body.data.map((m: { attributes: { content: unknown } }) =>
          m.attributes.content
        );
        assert.deepEqual(contents, [mark(app, "message", id)], `${app.id} ${JSON.stringify(id)}`);
        const meta = await chat(app, "GET", thread(id));
        assert.equal(meta.body.data.attributes.title, mark(app, "thread", id));
      }
    }
    // A socket of acme joining `eu/t1` from the start replays acme's thread only.
    const sock = await RawSocket.connect(server.wsUrl(ACME.key));
    try {
      const topic = `chat:${ACME.key}:eu/t1`;
      const joined = await sock.join(topic, { client_id: "c1", after_log_id: 0 });
      assert.equal(joined.status, "ok", JSON.stringify(joined.response));
      const seen = JSON.stringify([joined.response, ...sock.events(topic)]);
      assert.ok(seen.includes(mark(ACME, "message", "eu/t1")), seen.slice(0, 500));
      assert.ok(!seen.includes("acme-eu"), seen.slice(0, 500));
    } finally {
      await sock.close();
    }
  });
});

Deno.test("Pusher: terminate_connections reaches only the app's own user, whatever the ids", async () => {
  await withApps(async (server) => {
    /** A raw Pusher socket of `app` signed in as `user`. */
    const signedIn = async (app: TestApp, user: string) => {
      const raw = await RawPusher.connect(server, app.key);
      const auth = serverLib(server, app).authenticateUser(raw.socketId, { id: user });
      raw.send("pusher:signin", { auth: auth.auth, user_data: auth.user_data });
      await raw.waitFor((m) => m.event === "pusher:signin_success", 10_000);
      return raw;
    };
    /** Whether `raw` still answers a ping. */
    const alive = async (raw: RawPusher) => {
      raw.messages = [];
      raw.send("pusher:ping", {});
      await raw.waitFor((m) => m.event === "pusher:pong", 10_000);
      return raw.closeEvent === undefined;
    };
    const users = ["u", "l\nu", "l/u", "l%2Fu", "l:u"];
    const nl = await Promise.all(users.map((u) => signedIn(N_L, u)));
    const nU = await signedIn(N, "u");
    try {
      // `n` ends its users named like n-l's (`l\nu` joined to `n` read `n\nl\nu` before).
      for (const user of ["l\nu", "l/u", "l%2Fu", "l:u", "l"]) {
        assert.equal(await terminate(server, N, user), 200);
      }
      for (const raw of nl) assert.ok(await alive(raw));
      assert.ok(await alive(nU));
      // Its own `u` is closed with 4009; n-l's `u` stays.
      assert.equal(await terminate(server, N, "u"), 200);
      assert.equal((await nU.closed(10_000)).code, 4009);
      for (const raw of nl) assert.ok(await alive(raw));
      // n-l's `l/u` is ended by n-l alone, and only that one.
      assert.equal(await terminate(server, N_L, "l/u"), 200);
      assert.equal((await nl[2].closed(10_000)).code, 4009);
      for (const raw of [nl[0], nl[1], nl[3], nl[4]]) assert.ok(await alive(raw));
    } finally {
      for (const raw of [...nl, nU]) raw.close();
    }
  });
});

Deno.test("the path the Pusher libraries build answers for ids with - and _, and as the app's own", async () => {
  await withApps(async (server) => {
    for (const app of [ACME, ACME_EU, ACME_US, N_L]) {
      const res = await serverLib(server, app).trigger("news", "ev", { from: app.id });
      assert.equal(res.status, 200, app.id);
    }
    // One app's signature on another app's path is refused.
    const foreign = await fetch(`${server.baseUrl}/apps/acme-eu/events?auth_key=acme-key`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    await foreign.body?.cancel();
    assert.equal(foreign.status, 401);
  });
});
