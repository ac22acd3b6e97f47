// The NATS link's requests lost in an election (lib/cluster/link.ts): while a stream has no
// working leader (its leader killed or frozen, the others electing), JetStream drops the
// requests sent meanwhile and answers none of them; a read or a publish sent then would wait out
// its whole timeout after JetStream is back, and the write that needs it with it. The link sends
// such a request again as soon as JetStream answers a later one. Here a plain client on a
// nats-server without JetStream plays JetStream (the API and the stream's subject), so which
// request is lost is decided, not timed: "electing" drops every request, "led" answers them.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { connect, type NatsConnection } from "nats";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { freePort, natsServerBin } from "./nats_servers.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A stand-in JetStream: one stream, messages deduplicated by message id. */
interface FakeJetStream {
  nc: NatsConnection;
  mode: "electing" | "led";
  /** Requests seen: reads by position, publishes by message id. */
  reads: Map<number, number>;
  publishes: Map<string, number>;
}

async function fakeJetStream(url: string): Promise<FakeJetStream> {
  const nc = await connect({ servers: [url] });
  const fake: FakeJetStream = { nc, mode: "led", reads: new Map(), publishes: new Map() };
  const stored: { id: string; data: Uint8Array }[] = [];
  const json = (v: unknown) => enc(JSON.stringify(v));
  nc.subscribe("$JS.API.INFO", {
    callback: (_e, m) =>
      m.respond(json({
        type: "io.nats.jetstream.api.v1.account_info_response",
        memory: 0,
        storage: 0,
        streams: 1,
        consumers: 0,
        limits: { max_memory: -1, max_storage: -1, max_streams: -1, max_consumers: -1 },
        api: { total: 0, errors: 0 },
      })),
  });
  nc.subscribe("$JS.API.STREAM.INFO.SWITCHBOARD", {
    callback: (_e, m) =>
      fake.mode === "led" &&
      m.respond(json({
        type: "io.nats.jetstream.api.v1.stream_info_response",
        config: { name: "SWITCHBOARD", subjects: ["sb.log"] },
        created: new Date().toISOString(),
        state: { messages: stored.length, first_seq: 1, last_seq: stored.length },
      })),
  });
  nc.subscribe("$JS.API.STREAM.MSG.GET.SWITCHBOARD", {
    callback: (_e, m) => {
      const { seq } = JSON.parse(new TextDecoder().decode(m.data)) as { seq: number };
      fake.reads.set(seq, (fake.reads.get(seq) ?? 0) + 1);
      if (fake.mode === "electing") return;
      const msg = stored[seq - 1];
      m.respond(json(
        msg
          ? { type: "io.nats.jetstream.api.v1.stream_msg_get_response", message: { subject: "sb.log", seq, data: Buffer.from(msg.data).toString("base64"), time: new Date().toISOString() } }
          : { type: "io.nats.jetstream.api.v1.stream_msg_get_response", error: { code: 404, err_code: 10037, description: "no message found" } },
      ));
    },
  });
  nc.subscribe("sb.log", {
    callback: (_e, m) => {
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      fake.publishes.set(id, (fake.publishes.get(id) ?? 0) + 1);
      if (fake.mode === "electing") return;
      let at = stored.findIndex((s) => s.id === id);
      const duplicate = at >= 0;
      if (!duplicate) at = stored.push({ id, data: m.data }) - 1;
      m.respond(json({ stream: "SWITCHBOARD", seq: at + 1, ...(duplicate ? { duplicate: true } : {}) }));
    },
  });
  await nc.flush();
  return fake;
}

async function withFake(fn: (link: ClusterLink, fake: FakeJetStream) => Promise<void>) {
  const port = await freePort();
  const server = new Deno.Command(natsServerBin(), { args: ["-a", "127.0.0.1", "-p", String(port)], stdout: "null", stderr: "null" }).spawn();
  const url = `nats://127.0.0.1:${port}`;
  let fake: FakeJetStream | undefined;
  let link: ClusterLink | undefined;
  try {
    for (let i = 0; !fake; i++) {
      try {
        fake = await fakeJetStream(url);
      } catch (err) {
        if (i > 50) throw err;
        await sleep(100);
      }
    }
    link = await ClusterLink.open([url], "resend", 10_000);
    await fn(link, fake);
  } finally {
    await link?.close().catch(() => {});
    await fake?.nc.close().catch(() => {});
    server.kill("SIGKILL");
    await server.status;
  }
}

Deno.test("cluster link: a read lost in an election is sent again once JetStream answers a later request", async () => {
  await withFake(async (link, fake) => {
    const first = await link.append(enc("one"), "m-1", 2000);
    assert.equal(first.kind, "stored", JSON.stringify(first));
    fake.mode = "electing";
    const read = link.read(1).then((d) => (d ? new TextDecoder().decode(d) : "none"), (err) => `failed: ${String(err)}`);
    // JetStream fails meanwhile (a publish times out), then has a leader again.
    const lost = await link.append(enc("two"), "m-2", 300);
    assert.equal(lost.kind, "unknown");
    fake.mode = "led";
    await sleep(150);
    const again = await link.append(enc("three"), "m-3", 2000);
    assert.equal(again.kind, "stored", JSON.stringify(again));
    assert.equal(await read, "one", "the read sent during the election is answered");
    assert.ok((fake.reads.get(1) ?? 0) >= 2, `the read was sent again (${fake.reads.get(1)} requests)`);
  });
});

Deno.test("cluster link: a publish lost in an election is sent again, under its message id, once JetStream answers a later one", async () => {
  await withFake(async (link, fake) => {
    fake.mode = "electing";
    const pending = link.append(enc("lost"), "m-lost", 6000);
    const lost = await link.append(enc("two"), "m-2", 300);
    assert.equal(lost.kind, "unknown");
    fake.mode = "led";
    await sleep(150);
    const later = await link.append(enc("later"), "m-later", 2000);
    assert.equal(later.kind, "stored", JSON.stringify(later));
    const r = await pending;
    assert.equal(r.kind, "stored", `the publish sent during the election is stored: ${JSON.stringify(r)}`);
    assert.equal(fake.publishes.get("m-lost"), 2, "sent twice under one message id");
    assert.equal(new TextDecoder().decode((await link.read(r.kind === "stored" ? r.seq : 0))!), "lost");
    // Without a failure seen since it was sent, a slow request is never sent again.
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
