// JetStream peer of the durable-write benchmark (Bun, the `nats` client): `concurrency`
// closed-loop writers publish to one stream, on one hot subject or across `objects` subjects,
// each waiting for JetStream's ack. Writers share 8 connections.
import { connect } from "nats";
import { config, done, mark, SelfCpu, sleep } from "./common.ts";
import { latencySummary, Reservoir } from "../lib/stats.ts";

interface Cfg {
  port: number;
  objects: number;
  concurrency: number;
  seconds: number;
  warmup: number;
}

const cfg = config<Cfg>();
const conns = await Promise.all(Array.from({ length: 8 }, () => connect({ servers: `127.0.0.1:${cfg.port}` })));
await (await conns[0].jetstreamManager()).streams.add({ name: `bench-${cfg.objects}-${cfg.concurrency}`, subjects: [`b${cfg.objects}x${cfg.concurrency}.>`] });
const js = conns.map((c) => c.jetstream());
const payload = new TextEncoder().encode('{"op":"increment","key":"n","by":1}');
const lat = new Reservoir();
let measuring = false;
let running = true;
let count = 0;
let errors = 0;

async function writer(w: number) {
  let n = 0;
  while (running) {
    const obj = cfg.objects === 1 ? "hot" : `o${(w * 7919 + n * 104729) % cfg.objects}`;
    n++;
    const t0 = performance.now();
    try {
      await js[w % js.length].publish(`b${cfg.objects}x${cfg.concurrency}.${obj}`, payload);
    } catch {
      errors++;
      await sleep(10);
      continue;
    }
    if (measuring) {
      lat.add(performance.now() - t0);
      count++;
    }
  }
}

const writers = Array.from({ length: cfg.concurrency }, (_, w) => writer(w));
await sleep(cfg.warmup * 1000);
const cpu = new SelfCpu();
mark("start");
const t0 = performance.now();
measuring = true;
await sleep(cfg.seconds * 1000);
measuring = false;
const elapsed = (performance.now() - t0) / 1000;
mark("end");
const genCpu = cpu.share();
running = false;
await Promise.all(writers);
await Promise.all(conns.map((c) => c.close()));
done({ writes: count, perSecond: count / elapsed, ...latencySummary(lat.values), errors, genCpu });
