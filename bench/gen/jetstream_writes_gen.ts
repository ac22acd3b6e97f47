// JetStream peer of the durable-write benchmark (Bun, the `nats` client): `concurrency`
// closed-loop writers publish to one stream, on one hot subject or across `objects` subjects,
// each waiting for JetStream's ack. Writers share 8 connections.
import { connect } from "nats";
import { closedLoop, config, done, type PeerWriteConfig, sleep } from "./common.ts";

const cfg = config<PeerWriteConfig>();
const conns = await Promise.all(
  Array.from({ length: 8 }, () => connect({ servers: `127.0.0.1:${cfg.port}` })),
);
await (await conns[0].jetstreamManager()).streams.add({
  name: `bench-${cfg.objects}-${cfg.concurrency}`,
  subjects: [`b${cfg.objects}x${cfg.concurrency}.>`],
});
const js = conns.map((c) => c.jetstream());
const payload = new TextEncoder().encode('{"op":"increment","key":"n","by":1}');
let errors = 0;
const subject = (w: number, n: number) =>
  `b${cfg.objects}x${cfg.concurrency}.${
    cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`
  }`;
const r = await closedLoop(cfg, async (w, n) => {
  try {
    await js[w % js.length].publish(subject(w, n), payload);
    return true;
  } catch {
    errors++;
    await sleep(10);
    return false;
  }
});
await Promise.all(conns.map((c) => c.close()));
done({ ...r, errors });
