/**
 * Test helper: a stand-in for JetStream, played by a plain client on a nats-server without
 * JetStream (the API subjects the cluster link uses, and the log's subject), so a test decides
 * which request is answered, refused (10008) or lost: "led" answers every request, "electing"
 * drops them (a stream without a leader), "refusing" answers the API with 10008 (a server that
 * lost sight of JetStream's meta leader) and drops publishes. One stream, messages
 * deduplicated by message id.
 */
import { Buffer } from "node:buffer";
import { connect, type NatsConnection } from "nats";
import { freePort, natsServerBin } from "./nats_servers.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A stand-in JetStream: one stream, messages deduplicated by message id. */
export interface FakeJetStream {
  nc: NatsConnection;
  mode: "electing" | "led" | "refusing";
  /** Requests seen: reads by position, publishes by message id. */
  reads: Map<number, number>;
  publishes: Map<string, number>;
}

export async function fakeJetStream(url: string): Promise<FakeJetStream> {
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
  const refused = (m: { respond(d: Uint8Array): boolean }) =>
    m.respond(
      json({
        error: {
          code: 503,
          err_code: 10008,
          description: "JetStream system temporarily unavailable",
        },
      }),
    );
  nc.subscribe("$JS.API.STREAM.INFO.SWITCHBOARD", {
    callback: (_e, m) =>
      fake.mode === "refusing" ? refused(m) : fake.mode === "led" &&
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
      if (fake.mode === "refusing") return refused(m);
      if (fake.mode === "electing") return;
      const msg = stored[seq - 1];
      m.respond(json(
        msg
          ? {
            type: "io.nats.jetstream.api.v1.stream_msg_get_response",
            message: {
              subject: "sb.log",
              seq,
              data: Buffer.from(msg.data).toString("base64"),
              time: new Date().toISOString(),
            },
          }
          : {
            type: "io.nats.jetstream.api.v1.stream_msg_get_response",
            error: { code: 404, err_code: 10037, description: "no message found" },
          },
      ));
    },
  });
  nc.subscribe("sb.log", {
    callback: (_e, m) => {
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      fake.publishes.set(id, (fake.publishes.get(id) ?? 0) + 1);
      if (fake.mode !== "led") return;
      let at = stored.findIndex((s) => s.id === id);
      const duplicate = at >= 0;
      if (!duplicate) at = stored.push({ id, data: m.data }) - 1;
      m.respond(
        json({ stream: "SWITCHBOARD", seq: at + 1, ...(duplicate ? { duplicate: true } : {}) }),
      );
    },
  });
  await nc.flush();
  return fake;
}

/** A plain nats-server on a free loopback port; `stop()` kills it. */
export async function plainServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const server = new Deno.Command(natsServerBin(), {
    args: ["-a", "127.0.0.1", "-p", String(port)],
    stdout: "null",
    stderr: "null",
  }).spawn();
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      server.kill("SIGKILL");
      await server.status;
    },
  };
}

/** Connects a stand-in JetStream to `url`, retrying while the server starts. */
export async function fakeOn(url: string): Promise<FakeJetStream> {
  for (let i = 0;; i++) {
    try {
      return await fakeJetStream(url);
    } catch (err) {
      if (i > 50) throw err;
      await sleep(100);
    }
  }
}
