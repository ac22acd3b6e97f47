import assert from "node:assert/strict";
import { SignJWT } from "jose";
import type { App } from "../../lib/config/apps.ts";
import { base64urlDecodeText, base64urlEncode } from "../../lib/auth/base64url.ts";
import { mintFastToken, verifyFastToken } from "../../lib/auth/fast_token.ts";
import { issueJwt } from "../../lib/auth/jwt.ts";
import { constantTimeEqual, verifyToken } from "../../lib/auth/verify.ts";

const app: App = {
  id: "app-1",
  key: "key-1",
  secret: "secret-1",
  enable_user_authentication: 0,
  enable_client_messages: true,
  max_client_events_per_sec: 100,
  max_backend_events_per_sec: 10_000,
};
const other: App = { ...app, id: "app-2", key: "key-2", secret: "secret-2" };
const CAPS = ["channel:subscribe:private-a", "object:read:order/*"];
const enc = new TextEncoder();

async function hmac(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    enc.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return base64urlEncode(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(text))));
}

function claims(extra: Record<string, unknown> = {}) {
  return {
    socket_id: "s1",
    client_id: "u1",
    capabilities: CAPS,
    app_id: app.id,
    app_key: app.key,
    ...extra,
  };
}

async function jwt(
  body: Record<string, unknown>,
  opts: { secret?: string; aud?: string; exp?: number; nbf?: number; alg?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return await new SignJWT(body)
    .setProtectedHeader({ alg: opts.alg ?? "HS256" })
    .setAudience(opts.aud ?? "service:v3")
    .setIssuedAt(now)
    .setNotBefore(opts.nbf ?? now)
    .setExpirationTime(opts.exp ?? now + 60)
    .setJti("j1")
    .sign(enc.encode(opts.secret ?? app.secret));
}

Deno.test("base64url helpers round-trip text and refuse non-canonical input", () => {
  for (const s of ["", "a", "ab", "abc", "héllo ✓", '{"x":1}']) {
    assert.equal(base64urlDecodeText(base64urlEncode(s)), s);
  }
  assert.equal(base64urlEncode(new Uint8Array([251, 255])), "-_8");
  assert.equal(base64urlDecodeText("YQ=="), null);
  assert.equal(base64urlDecodeText("a+b/"), null);
  assert.equal(base64urlDecodeText("YR"), null); // non-zero trailing bits
  assert.equal(base64urlDecodeText("Y"), null);
});

Deno.test("`constantTimeEqual()` compares contents and lengths", () => {
  assert.ok(constantTimeEqual("abc", "abc"));
  assert.ok(constantTimeEqual("", ""));
  assert.ok(!constantTimeEqual("abc", "abd"));
  assert.ok(!constantTimeEqual("abc", "abcd"));
  assert.ok(!constantTimeEqual("abc", ""));
});

Deno.test("`mintFastToken()` produces the spec's exact three-part format", async () => {
  const token = await mintFastToken(app, "s1", CAPS, "u1");
  const [key, payloadB64, sig] = token.split(".");
  assert.equal(key, app.key);
  assert.deepEqual(JSON.parse(base64urlDecodeText(payloadB64)!), {
    socket_id: "s1",
    capabilities: CAPS,
    client_id: "u1",
  });
  assert.equal(sig, await hmac(app.secret, `${app.key}.${payloadB64}`));
  const anon = await mintFastToken(app, "s1", CAPS);
  assert.ok(!("client_id" in JSON.parse(base64urlDecodeText(anon.split(".")[1])!)));
});

Deno.test("`mintFastToken()` throws on an invalid capability list or socket id", async () => {
  await assert.rejects(() => mintFastToken(app, "s1", []), /empty/);
  await assert.rejects(() => mintFastToken(app, "s1", ["x"]), /"x" is malformed/);
  await assert.rejects(() => mintFastToken(app, "", CAPS), /socketId/);
});

Deno.test("`verifyToken()` round-trips a fast-path token into a Principal", async () => {
  const p = await verifyToken(app, await mintFastToken(app, "s1", CAPS, "u1"), "s1");
  assert.ok(p);
  assert.equal(p.socketId, "s1");
  assert.equal(p.clientId, "u1");
  assert.equal(p.kind, "token");
  assert.deepEqual(p.capabilities, CAPS);
  assert.ok(p.can("object:read:order/9"));
  assert.ok(!p.can("channel:subscribe:private-b"));
  const anon = await verifyToken(app, await mintFastToken(app, "s1", CAPS), "s1");
  assert.equal(anon?.clientId, undefined);
  assert.deepEqual(await verifyFastToken(app, await mintFastToken(app, "s1", CAPS)), {
    socket_id: "s1",
    capabilities: CAPS,
  });
});

Deno.test("`verifyToken()` round-trips a JWT into a Principal", async () => {
  const token = await issueJwt(app, { socket_id: "s1", client_id: "u1", capabilities: CAPS });
  const p = await verifyToken(app, token, "s1");
  assert.ok(p);
  assert.equal(p.clientId, "u1");
  assert.deepEqual(p.capabilities, CAPS);
  assert.ok(p.can("channel:subscribe:private-a"));
  // The hand-built JWT used by the refusal tests below is accepted when nothing is wrong.
  assert.ok(await verifyToken(app, await jwt(claims()), "s1"));
});

Deno.test("`issueJwt()` sets every spec claim with a 300 s default lifetime", async () => {
  const token = await issueJwt(app, { socket_id: "s1", client_id: "u1", capabilities: CAPS });
  const [h, b] = token.split(".");
  assert.deepEqual(JSON.parse(base64urlDecodeText(h)!), { alg: "HS256", typ: "JWT" });
  const c = JSON.parse(base64urlDecodeText(b)!);
  assert.equal(c.aud, "service:v3");
  assert.equal(c.socket_id, "s1");
  assert.equal(c.client_id, "u1");
  assert.deepEqual(c.capabilities, CAPS);
  assert.equal(c.app_id, app.id);
  assert.equal(c.app_key, app.key);
  assert.equal(c.exp - c.iat, 300);
  assert.equal(c.nbf, c.iat);
  assert.match(c.jti, /^[0-9a-f-]{36}$/);
  const again = await issueJwt(app, { socket_id: "s1", client_id: "u1", capabilities: CAPS }, 10);
  const c2 = JSON.parse(base64urlDecodeText(again.split(".")[1])!);
  assert.equal(c2.exp - c2.iat, 10);
  assert.notEqual(c2.jti, c.jti);
});

Deno.test("`verifyToken()` refuses malformed tokens", async () => {
  for (
    const t of [
      undefined,
      null,
      42,
      "",
      "abc",
      "a.b",
      "a.b.c.d",
      `${app.key}.x.y`,
      `${app.key}..`,
      "x".repeat(20_000),
    ]
  ) {
    assert.equal(await verifyToken(app, t, "s1"), null, String(t).slice(0, 20));
  }
  // Well-signed, but the payload is not the required shape.
  for (
    const payload of [{ socket_id: "s1" }, { socket_id: "s1", capabilities: [] }, {
      socket_id: 1,
      capabilities: CAPS,
    }, [1]]
  ) {
    const b64 = base64urlEncode(JSON.stringify(payload));
    const t = `${app.key}.${b64}.${await hmac(app.secret, `${app.key}.${b64}`)}`;
    assert.equal(await verifyToken(app, t, "s1"), null, JSON.stringify(payload));
  }
  assert.equal(await verifyToken(app, await jwt(claims({ capabilities: ["bad"] })), "s1"), null);
});

Deno.test("`verifyToken()` refuses an expired JWT", async () => {
  const now = Math.floor(Date.now() / 1000);
  assert.equal(
    await verifyToken(app, await jwt(claims(), { exp: now - 1, nbf: now - 100 }), "s1"),
    null,
  );
});

Deno.test("`verifyToken()` refuses a JWT whose nbf is in the future", async () => {
  const now = Math.floor(Date.now() / 1000);
  assert.equal(
    await verifyToken(app, await jwt(claims(), { nbf: now + 60, exp: now + 120 }), "s1"),
    null,
  );
});

Deno.test("`verifyToken()` refuses a wrong signature in either form", async () => {
  assert.equal(await verifyToken(app, await jwt(claims(), { secret: "other" }), "s1"), null);
  const fast = await mintFastToken({ key: app.key, secret: "other" }, "s1", CAPS);
  assert.equal(await verifyToken(app, fast, "s1"), null);
  const good = await mintFastToken(app, "s1", CAPS);
  const flipped = good.slice(0, -2) + (good.endsWith("AA") ? "BA" : "AA");
  assert.equal(await verifyToken(app, flipped, "s1"), null);
});

Deno.test("`verifyToken()` refuses a JWT with the wrong audience", async () => {
  assert.equal(await verifyToken(app, await jwt(claims(), { aud: "service:v2" }), "s1"), null);
});

Deno.test("`verifyToken()` refuses alg none and non-HS256 HMAC", async () => {
  const header = base64urlEncode(JSON.stringify({ alg: "none", typ: "JWT" }));
  const now = Math.floor(Date.now() / 1000);
  const body = base64urlEncode(
    JSON.stringify({ ...claims(), aud: "service:v3", iat: now, nbf: now, exp: now + 60 }),
  );
  assert.equal(await verifyToken(app, `${header}.${body}.`, "s1"), null);
  assert.equal(await verifyToken(app, await jwt(claims(), { alg: "HS512" }), "s1"), null);
});

Deno.test("`verifyToken()` refuses a tampered payload in either form", async () => {
  const fast = await mintFastToken(app, "s1", ["channel:subscribe:private-a"]);
  const [k, , sig] = fast.split(".");
  const wider = base64urlEncode(
    JSON.stringify({ socket_id: "s1", capabilities: ["channel:subscribe:*"] }),
  );
  assert.equal(await verifyToken(app, `${k}.${wider}.${sig}`, "s1"), null);
  const token = await issueJwt(app, { socket_id: "s1", client_id: "u1", capabilities: CAPS });
  const [h, , s] = token.split(".");
  const now = Math.floor(Date.now() / 1000);
  const forged = base64urlEncode(
    JSON.stringify({
      ...claims({ capabilities: ["object:read:*"] }),
      aud: "service:v3",
      exp: now + 60,
    }),
  );
  assert.equal(await verifyToken(app, `${h}.${forged}.${s}`, "s1"), null);
});

Deno.test("`verifyToken()` refuses a token for socket A on socket B", async () => {
  assert.equal(await verifyToken(app, await mintFastToken(app, "A", CAPS), "B"), null);
  const token = await issueJwt(app, { socket_id: "A", client_id: "u1", capabilities: CAPS });
  assert.equal(await verifyToken(app, token, "B"), null);
  assert.ok(await verifyToken(app, token, "A"));
});

Deno.test("`verifyToken()` refuses another app's token in either form", async () => {
  assert.equal(await verifyToken(app, await mintFastToken(other, "s1", CAPS), "s1"), null);
  const theirs = await issueJwt(other, { socket_id: "s1", client_id: "u1", capabilities: CAPS });
  assert.equal(await verifyToken(app, theirs, "s1"), null);
  // Signed with our secret but claiming another app key.
  assert.equal(await verifyToken(app, await jwt(claims({ app_key: other.key })), "s1"), null);
});

Deno.test("`verifyToken()` accepts a fast token for an app key containing a dot", async () => {
  const dotted = { ...app, key: "my.key" };
  const p = await verifyToken(dotted, await mintFastToken(dotted, "s1", CAPS), "s1");
  assert.deepEqual(p?.capabilities, CAPS);
});
