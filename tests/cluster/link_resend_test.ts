// The NATS link's requests lost in an election (lib/cluster/link.ts): while a stream has no
// working leader (its leader killed or frozen, the others electing), JetStream drops the
// requests sent meanwhile and answers none of them; a read or a publish sent then would wait out
// its whole timeout after JetStream is back, and the write that needs it with it. The link sends
// such a request again as soon as JetStream answers a later one. Here a plain client on a
// nats-server without JetStream plays JetStream (`fake_jetstream.ts`), so which request is
// lost is decided, not timed: "electing" drops every request, "led" answers them.
import assert from "node:assert/strict";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { type FakeJetStream, fakeOn, plainServer } from "./fake_jetstream.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function withFake(fn: (link: ClusterLink, fake: FakeJetStream) => Promise<void>) {
  const server = await plainServer();
  let fake: FakeJetStream | undefined;
  let link: ClusterLink | undefined;
  try {
    fake = await fakeOn(server.url);
    link = await ClusterLink.open([server.url], "resend", 10_000);
    await fn(link, fake);
  } finally {
    await link?.close().catch(() => {});
    await fake?.nc.close().catch(() => {});
    await server.stop();
  }
}

/**
 * Ends an election the test started (`fake.mode = "electing"`): a publish sent meanwhile times
 * out unanswered, JetStream has a leader again, and a later publish is answered, which is what
 * makes the link send again what it sent during the election.
 */
async function passElection(link: ClusterLink, fake: FakeJetStream, laterId: string) {
  const lost = await link.append(enc("two"), "m-2", 300);
  assert.equal(lost.kind, "unknown");
  fake.mode = "led";
  await sleep(150);
  const later = await link.append(enc(laterId), laterId, 2000);
  assert.equal(later.kind, "stored", JSON.stringify(later));
}

Deno.test("cluster link: a read lost in an election is sent again once JetStream answers a later request", async () => {
  await withFake(async (link, fake) => {
    const first = await link.append(enc("one"), "m-1", 2000);
    assert.equal(first.kind, "stored", JSON.stringify(first));
    fake.mode = "electing";
    const read = link.read(1).then(
      (d) => (d ? new TextDecoder().decode(d) : "none"),
      (err) => `failed: ${String(err)}`,
    );
    await passElection(link, fake, "m-3");
    assert.equal(await read, "one", "the read sent during the election is answered");
    assert.ok(
      (fake.reads.get(1) ?? 0) >= 2,
      `the read was sent again (${fake.reads.get(1)} requests)`,
    );
  });
});

Deno.test("cluster link: a publish lost in an election is sent again, under its message id, once JetStream answers a later one", async () => {
  await withFake(async (link, fake) => {
    fake.mode = "electing";
    const pending = link.append(enc("lost"), "m-lost", 6000);
    await passElection(link, fake, "m-later");
    const r = await pending;
    assert.equal(
      r.kind,
      "stored",
      `the publish sent during the election is stored: ${JSON.stringify(r)}`,
    );
    assert.equal(fake.publishes.get("m-lost"), 2, "sent twice under one message id");
    assert.equal(
      new TextDecoder().decode((await link.read(r.kind === "stored" ? r.seq : 0))!),
      "lost",
    );
    // Sent well after the last failure seen, a slow request is never sent again.
    await sleep(1200);
    fake.mode = "electing";
    const slow = link.read(1).catch(() => null);
    await sleep(150);
    fake.mode = "led";
    assert.equal((await link.append(enc("four"), "m-4", 2000)).kind, "stored");
    await sleep(100);
    assert.equal(fake.reads.get(1), 1, "a read waiting while nothing failed is not sent again");
    await slow;
  });
});
