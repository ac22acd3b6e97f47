// The hub's fan-out without sockets or HTTP: CPU per delivery of `Hub.publish` in one process,
// JSON and Pusher subscribers, 1 channel x 1000 and 100 channels x 10, each publish building
// its topic as a product does (`channelAddress`). Under Deno the JS loop sends; under Bun with
// NATIVE=1 a no-op native publish stands for Bun's topics (the binary's path: encode once per
// format). ROOT=<repo dir> measures another tree's lib/ (one whose hub still took topic
// strings too), so two versions can be run alternately on the same machine:
//   npx deno run -A bench/baselines/hub_in_process.ts
//   NATIVE=1 bun bench/baselines/hub_in_process.ts
//   ROOT=/path/to/other/checkout npx deno run -A bench/baselines/hub_in_process.ts
// Prints one JSON line: µs of CPU per delivery for each case.
const root = process.env.ROOT ?? new URL("../..", import.meta.url).pathname;
const { Hub } = await import(`${root}/lib/hub/hub.ts`);
const { Topic } = await import(`${root}/lib/wire/topic.ts`);
const { encodeForPusher, PUSHER_FORMAT } = await import(`${root}/lib/pusher/wire.ts`);
/** Parsed topics (this tree) or topic strings (trees before them). */
const parsed = typeof Topic.of === "function";
const topicOf = (name: string): unknown =>
  parsed ? Topic.of("pubsub", "key1", name) : `pubsub:key1:${name}`;
const native = process.env.NATIVE === "1";

/** µs of CPU per delivery of `events` publishes over `channels` x `subs` subscribers. */
function run(channels: number, subs: number, format: string, events: number): number {
  let bytes = 0;
  const count = (d: string | Uint8Array) =>
    void (bytes += typeof d === "string" ? d.length : d.byteLength);
  const hub = new Hub();
  hub.addFormat(PUSHER_FORMAT, encodeForPusher);
  if (native) hub.useNative({ publish: (_name: string, d: string | Uint8Array) => count(d) });
  let id = 0;
  for (let c = 0; c < channels; c++) {
    for (let i = 0; i < subs; i++) {
      const sub = {
        socketId: `s.${++id}`,
        format,
        sendEncoded: count,
        nativeSubscribe() {},
        nativeUnsubscribe() {},
      };
      hub.subscribe(topicOf(`ch-${c}`), sub);
    }
  }
  const start = process.cpuUsage();
  for (let e = 0; e < events; e++) {
    hub.publish(topicOf(`ch-${e % channels}`), "price", { serial: e, data: { p: e, s: "abc" } });
  }
  const used = process.cpuUsage(start);
  if (bytes === 0) throw new Error("nothing was delivered");
  return (used.user + used.system) / (events * subs);
}

const out: Record<string, number> = {};
for (
  const [name, channels, subs, format, events] of [
    ["1x1000 json", 1, 1000, "json", 4000],
    ["100x10 json", 100, 10, "json", 100_000],
    ["1x1000 pusher", 1, 1000, PUSHER_FORMAT, 4000],
    ["100x10 pusher", 100, 10, PUSHER_FORMAT, 100_000],
  ] as const
) {
  run(channels, subs, format, Math.ceil(events / 4)); // warm-up
  out[name] = Number(run(channels, subs, format, events).toFixed(4));
}
console.log(JSON.stringify({ root, parsedTopics: parsed, native, us_per_delivery: out }));
