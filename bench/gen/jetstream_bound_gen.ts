// The clustered write rate's bound on this machine (Bun, the `nats` client): `concurrency`
// closed-loop writers over one connection per nats-server in `urls` (as the nodes connect),
// each write a `bytes`-byte message with a message id published to a stream with 3 replicas
// and acknowledged once stored. `batched`: each connection has one publisher that sends every
// write waiting on it as one message (as a node sends its queued writes as one batch).
import { connect, type JetStreamClient } from "nats";
import { closedLoop, config, done, sleep } from "./common.ts";

interface Cfg {
  urls: string[];
  concurrency: number;
  seconds: number;
  warmup: number;
  bytes: number;
  batched: boolean;
  stream: string;
}

const cfg = config<Cfg>();
const conns = await Promise.all(cfg.urls.map((servers) => connect({ servers })));
// A fresh cluster may still be electing its JetStream leaders (more so on a loaded machine).
for (let tries = 0;; tries++) {
  try {
    await (await conns[0].jetstreamManager()).streams.add({
      name: cfg.stream,
      subjects: [`${cfg.stream}.>`],
      num_replicas: Math.min(3, cfg.urls.length),
      duplicate_window: 120_000_000_000,
    });
    break;
  } catch (err) {
    if (tries >= 60) throw err;
    await sleep(500);
  }
}
const js = conns.map((c) => c.jetstream());
const subject = `${cfg.stream}.log`;
let errors = 0;
let batches = 0;

/** Publishes `n` writes' bytes as one message and waits for the stream's ack. */
async function publish(j: JetStreamClient, n: number): Promise<boolean> {
  try {
    await j.publish(subject, new Uint8Array(cfg.bytes * n), { msgID: crypto.randomUUID() });
    batches++;
    return true;
  } catch {
    errors++;
    await sleep(10);
    return false;
  }
}

/** One publisher per connection: every write waiting goes out in the next message. */
class Batcher {
  waiting: ((ok: boolean) => void)[] = [];
  busy = false;
  constructor(readonly j: JetStreamClient) {}
  write(): Promise<boolean> {
    const p = new Promise<boolean>((r) => this.waiting.push(r));
    if (!this.busy) void this.run();
    return p;
  }
  async run(): Promise<void> {
    this.busy = true;
    while (this.waiting.length > 0) {
      const out = this.waiting.splice(0, 256);
      const ok = await publish(this.j, out.length);
      for (const r of out) r(ok);
    }
    this.busy = false;
  }
}
const batchers = js.map((j) => new Batcher(j));

const r = await closedLoop(
  cfg,
  (w) => cfg.batched ? batchers[w % batchers.length].write() : publish(js[w % js.length], 1),
);
await Promise.all(conns.map((c) => c.close()));
done({ ...r, errors, batches });
